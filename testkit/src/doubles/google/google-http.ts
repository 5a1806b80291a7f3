import type { IncomingMessage, ServerResponse } from 'node:http';

/** Helpers shared by the Google double's parts: JSON answers, Google's error body, opaque tokens. */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', ...headers });
  res.end(JSON.stringify(body));
}

/** Google's JSON error body (reference §5.5): `{error: {code, message, errors: [{domain, reason, message}], status}}`. */
export function googleError(res: ServerResponse, code: number, reason: string, message: string, options: { status?: string; details?: boolean; headers?: Record<string, string> } = {}) {
  const error = {
    code,
    message,
    ...(options.details
      ? { details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'googleapis.com' }] }
      : { errors: [{ domain: code === 403 && reason.toLowerCase().includes('limit') ? 'usageLimits' : 'global', reason, message }] }),
    ...(options.status ? { status: options.status } : {}),
  };
  sendJson(res, code, { error }, options.headers);
}

export async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

/** An opaque token carrying a small JSON state, as Google's page and sync tokens are opaque to clients. */
export const opaque = {
  seal: (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url'),
  open<T>(token: string): T | undefined {
    try {
      return JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as T;
    } catch {
      return undefined;
    }
  },
};

/** One page of `items` from the offset a `pageToken` carries; the state the token was minted for must match. */
export function pageOf<T>(items: readonly T[], pageToken: string | null, size: number, query: string): { slice: T[]; next?: string } | 'bad' {
  const opened = pageToken ? opaque.open<{ offset: number; query: string }>(pageToken) : { offset: 0, query };
  if (!opened || opened.query !== query || !Number.isInteger(opened.offset)) return 'bad';
  const slice = items.slice(opened.offset, opened.offset + size);
  const more = opened.offset + size < items.length;
  return { slice, ...(more ? { next: opaque.seal({ offset: opened.offset + size, query }) } : {}) };
}
