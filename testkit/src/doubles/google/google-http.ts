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
      : { errors: [{ domain: (code === 403 || code === 429) && reason.toLowerCase().includes('limit') ? 'usageLimits' : 'global', reason, message }] }),
    ...(options.status ? { status: options.status } : {}),
  };
  sendJson(res, code, { error }, options.headers);
}

/** The APIs the double serves, by the service name Google's errors give them (`google/api/error_reason.proto`, `ErrorInfo.metadata.service`). */
export const GOOGLE_API_SERVICES = { gmail: { name: 'Gmail API', service: 'gmail.googleapis.com' }, calendar: { name: 'Google Calendar API', service: 'calendar-json.googleapis.com' }, people: { name: 'People API', service: 'people.googleapis.com' } } as const;
export type GoogleApi = keyof typeof GOOGLE_API_SERVICES;
/** The Cloud project the double's client id belongs to, as Google names it in `consumer`. */
const DOUBLE_PROJECT = '424242424242';

/**
 * Google's 403 for an API not enabled in the Cloud project of the app's client id. The shape is the one
 * Google's API front end sends today, both the legacy `errors[]` (domain `usageLimits`, reason
 * `accessNotConfigured`) and the AIP-193 `details[]` with a `google.rpc.ErrorInfo` whose reason is
 * `SERVICE_DISABLED` in the `googleapis.com` domain, `metadata.service` and `metadata.consumer`
 * (`google/api/error_reason.proto`, ErrorReason SERVICE_DISABLED; Google Cloud "API design guide ›
 * Errors" for `errors`/`details`; bodies as clients report them, e.g. googleworkspace/python-samples#17,
 * taylorwilsdon/google_workspace_mcp#126 for Calendar). Whether Google checks the token before the
 * project's enablement is not documented: the double checks the token first (a guess).
 */
export function serviceDisabled(res: ServerResponse, api: GoogleApi) {
  const { name, service } = GOOGLE_API_SERVICES[api];
  const activationUrl = `https://console.developers.google.com/apis/api/${service}/overview?project=${DOUBLE_PROJECT}`;
  const message = `${name} has not been used in project ${DOUBLE_PROJECT} before or it is disabled. Enable it by visiting ${activationUrl} then retry. If you enabled this API recently, wait a few minutes for the action to propagate to our systems and retry.`;
  sendJson(res, 403, {
    error: {
      code: 403,
      message,
      errors: [{ message, domain: 'usageLimits', reason: 'accessNotConfigured', extendedHelp: 'https://console.developers.google.com' }],
      status: 'PERMISSION_DENIED',
      details: [
        { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'SERVICE_DISABLED', domain: 'googleapis.com', metadata: { service, consumer: `projects/${DOUBLE_PROJECT}`, activationUrl, serviceTitle: name, containerInfo: DOUBLE_PROJECT } },
        { '@type': 'type.googleapis.com/google.rpc.LocalizedMessage', locale: 'en-US', message },
        { '@type': 'type.googleapis.com/google.rpc.Help', links: [{ description: 'Google developers console API activation', url: activationUrl }] },
      ],
    },
  });
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
