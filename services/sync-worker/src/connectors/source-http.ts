import {
  SourceAuthError,
  SourceRateLimitedError,
  SourceRejectedError,
  SourceUnavailableError,
} from './source-errors.ts';

const MIN_RETRY_AFTER_MS = 1_000;
const MAX_RETRY_AFTER_MS = 3_600_000;
const DEFAULT_RETRY_AFTER_MS = 60_000;

/** `Retry-After` as seconds or an HTTP date, clamped to 1 s … 1 h; absent or unreadable gives 60 s. */
export function parseRetryAfter(header: string | null, now = Date.now()): number {
  if (!header) return DEFAULT_RETRY_AFTER_MS;
  const trimmed = header.trim();
  const ms = /^\d+$/.test(trimmed) ? Number(trimmed) * 1000 : Date.parse(trimmed) - now;
  if (!Number.isFinite(ms)) return DEFAULT_RETRY_AFTER_MS;
  return Math.min(Math.max(ms, MIN_RETRY_AFTER_MS), MAX_RETRY_AFTER_MS);
}

export type SourceRequest = {
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: unknown;
  /** Per-request timeout in milliseconds. */
  timeoutMs: number;
  /** Aborts the request when the job is cancelled (shutdown) or its deadline passes; rethrown as is. */
  signal?: AbortSignal;
  /** How the source is named in messages, e.g. "the hub". */
  what: string;
};

function seconds(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}

/** A short, printable detail from an error body: HA's `{message}` or the first line of text. */
function detailOf(text: string): string {
  try {
    const parsed = JSON.parse(text) as { message?: unknown };
    if (typeof parsed.message === 'string') return parsed.message.slice(0, 200);
  } catch {
    // not JSON: fall through to the text
  }
  return text.split('\n')[0]?.slice(0, 200) ?? '';
}

/**
 * One JSON request to a source, with every failure turned into a `SourceError` whose message is safe
 * to show. An abort from `signal` is rethrown unchanged so the caller can tell shutdown from failure.
 */
export async function requestJson(url: string, request: SourceRequest): Promise<unknown> {
  const timeout = AbortSignal.timeout(request.timeoutMs);
  const signal = request.signal ? AbortSignal.any([request.signal, timeout]) : timeout;
  let response: Response;
  try {
    response = await fetch(url, {
      method: request.method ?? 'GET',
      headers: { accept: 'application/json', ...(request.body === undefined ? {} : { 'content-type': 'application/json' }), ...request.headers },
      body: request.body === undefined ? undefined : JSON.stringify(request.body),
      signal,
      redirect: 'manual',
    });
  } catch (error) {
    if (request.signal?.aborted) throw request.signal.reason;
    if (timeout.aborted) throw new SourceUnavailableError(`${request.what} did not answer within ${seconds(request.timeoutMs)}`);
    const code = (error as { cause?: { code?: string } }).cause?.code;
    throw new SourceUnavailableError(`${request.what} could not be reached${code ? ` (${code})` : ''}`);
  }
  let text: string;
  try {
    text = await response.text();
  } catch {
    if (request.signal?.aborted) throw request.signal.reason;
    throw new SourceUnavailableError(`${request.what} broke off its answer`);
  }
  const status = response.status;
  if (status === 401 || status === 403) throw new SourceAuthError(`${request.what} refused the credentials (HTTP ${status})`);
  if (status === 429) {
    const wait = parseRetryAfter(response.headers.get('retry-after'));
    throw new SourceRateLimitedError(`${request.what} is rate limiting (HTTP 429); next try in ${seconds(wait)}`, wait);
  }
  if (status >= 500) throw new SourceUnavailableError(`${request.what} answered HTTP ${status}`);
  if (status >= 300) {
    const detail = detailOf(text) || `HTTP ${status}`;
    throw new SourceRejectedError(`${request.what} refused the request (HTTP ${status}: ${detail})`, status, detail);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new SourceUnavailableError(`${request.what} answered with something that is not JSON`);
  }
}
