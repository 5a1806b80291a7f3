import { AddressRefusedError } from '@pcg/shared/outbound';
import { AnswerTooLargeError, DEFAULT_MAX_ANSWER_BYTES, describeBytes, readCappedText } from './answer-reader.ts';
import { errorDetail } from './error-bodies.ts';
import { SourceAddressRefusedError, SourceRejectedError, SourceUnavailableError } from './source-errors.ts';
import { chainClassifiers, errorForVerdict, type SourceClassifier } from './source-verdict.ts';

/** A request body: JSON, XML (WebDAV), plain text with its type, or an HTML form (OAuth token endpoints). */
export type SourceBody = { json: unknown } | { xml: string } | { text: string; contentType: string } | { form: Record<string, string> };

export type SourceRequestOptions = {
  /** Any HTTP method, including WebDAV's PROPFIND and REPORT; default GET. */
  method?: string;
  headers?: Record<string, string>;
  /**
   * Headers that carry a credential. They are added to each hop only after `guard` accepted its address,
   * and without a guard only while the hop stays on the first request's origin.
   */
  auth?: Record<string, string>;
  body?: SourceBody;
  /** What the answer should be; sets `Accept`. Default json. */
  accept?: 'json' | 'xml' | 'text';
  /** Overrides the client's timeout for this request (redirect hops and the body included), in milliseconds. */
  timeoutMs?: number;
  /** Tried before the client's classifier, for this request only (Gmail's 404 on history is a stale cursor). */
  classify?: SourceClassifier;
};

export type SourceResponse = { status: number; url: string; headers: Headers; text: string };

export type SourceClientOptions = {
  /** How the source is named in messages, e.g. "the hub". */
  what: string;
  /** The provider's rule from a failed answer to a verdict. */
  classifier: SourceClassifier;
  /** Timeout of one request, in milliseconds. */
  timeoutMs: number;
  /** Aborts every request (shutdown, a live caller's deadline); its reason is rethrown unchanged. */
  signal?: AbortSignal;
  /** Checks an address before anything is sent to it (the first one and every redirect); returns why not, or undefined. */
  guard?: (url: URL) => string | undefined;
  /** Redirects followed, one at a time; default 5, 0 refuses any. */
  maxRedirects?: number;
  /** What carries the requests: the outbound policy's fetch for an address the operator gave; default the global one. */
  fetch?: typeof fetch;
  /** What the operator does about an address the outbound policy refused (e.g. "enter the hub's own address"). */
  refusedAddressFix?: string;
  /** Largest answer body read, in bytes (error answers included); default 64 MiB. */
  maxAnswerBytes?: number;
};

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const ACCEPT = { json: 'application/json', xml: 'application/xml, text/xml;q=0.9', text: '*/*' } as const;

function encodeBody(body: SourceBody | undefined): { body?: string; contentType?: string } {
  if (!body) return {};
  if ('json' in body) return { body: JSON.stringify(body.json), contentType: 'application/json' };
  if ('xml' in body) return { body: body.xml, contentType: 'application/xml; charset=utf-8' };
  if ('form' in body) return { body: new URLSearchParams(body.form).toString(), contentType: 'application/x-www-form-urlencoded' };
  return { body: body.text, contentType: body.contentType };
}

function seconds(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}

/**
 * The one way a connector talks HTTP to its source. Redirects are followed by hand, one at a time, each
 * address checked by `guard` before the credential is attached (undici would drop or forward headers on
 * its own, reference §0). A non-2xx answer becomes the error its verdict names (see `source-verdict.ts`),
 * with a message the gateway wrote; an abort from `signal` is rethrown unchanged so the caller can tell
 * shutdown from failure.
 */
export function createSourceClient(options: SourceClientOptions) {
  const { what, maxRedirects = 5, maxAnswerBytes = DEFAULT_MAX_ANSWER_BYTES } = options;
  const doFetch = options.fetch ?? fetch;

  function refused(url: URL, reason: string): never {
    throw new SourceRejectedError(`${what}: the address ${url.origin} was refused (${reason})`, 0, reason);
  }

  function check(url: URL): void {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') refused(url, 'not http or https');
    const reason = options.guard?.(url);
    if (reason !== undefined) refused(url, reason);
  }

  async function send(input: string | URL, request: SourceRequestOptions = {}): Promise<SourceResponse> {
    const timeoutMs = request.timeoutMs ?? options.timeoutMs;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
    const failed = (error: unknown, doing: string): never => {
      if (options.signal?.aborted) throw options.signal.reason;
      if (timeout.aborted) throw new SourceUnavailableError(`${what} did not answer within ${seconds(timeoutMs)}`);
      const code = (error as { cause?: { code?: string } }).cause?.code;
      throw new SourceUnavailableError(`${what} ${doing}${code ? ` (${code})` : ''}`);
    };

    const first = new URL(input);
    let url = first;
    let method = (request.method ?? 'GET').toUpperCase();
    let encoded = encodeBody(request.body);
    for (let hop = 0; ; hop += 1) {
      check(url);
      const trusted = options.guard !== undefined || url.origin === first.origin;
      const headers: Record<string, string> = {
        accept: ACCEPT[request.accept ?? 'json'],
        ...(encoded.contentType ? { 'content-type': encoded.contentType } : {}),
        ...request.headers,
        ...(trusted ? request.auth : {}),
      };
      let response: Response;
      try {
        response = await doFetch(url, { method, headers, body: encoded.body, signal, redirect: 'manual' });
      } catch (error) {
        if (error instanceof AddressRefusedError) {
          const fix = options.refusedAddressFix ? `; ${options.refusedAddressFix}` : '';
          throw new SourceAddressRefusedError(`${what}: ${error.message}; nothing was sent to it${fix}`);
        }
        return failed(error, 'could not be reached');
      }
      const location = response.headers.get('location');
      if (REDIRECTS.has(response.status) && location) {
        await response.body?.cancel().catch(() => undefined);
        if (hop >= maxRedirects) throw new SourceRejectedError(`${what} redirected more than ${maxRedirects} times`, response.status, 'too many redirects');
        url = new URL(location, url);
        // As browsers do: 303 (and 301/302 after a POST) go on as a GET without the body.
        if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === 'POST')) {
          if (method !== 'HEAD') method = 'GET';
          encoded = {};
        }
        continue;
      }
      let text: string;
      try {
        text = await readCappedText(response, maxAnswerBytes);
      } catch (error) {
        if (error instanceof AnswerTooLargeError) {
          throw new SourceRejectedError(`${what} answered with more than ${describeBytes(maxAnswerBytes)}, the most the gateway reads of one answer`, response.status, 'answer too large');
        }
        return failed(error, 'broke off its answer');
      }
      if (response.status >= 200 && response.status < 300) return { status: response.status, url: url.toString(), headers: response.headers, text };
      const answer = { status: response.status, headers: response.headers, text };
      const classify = request.classify ? chainClassifiers(request.classify, options.classifier) : options.classifier;
      const verdict = classify(answer) ?? { kind: 'rejected' as const };
      throw errorForVerdict(verdict, what, response.status, errorDetail(text));
    }
  }

  return {
    /** The raw 2xx answer (WebDAV's 207 included). */
    send,
    /** The 2xx answer parsed as JSON; an empty body is null. */
    async json(input: string | URL, request: SourceRequestOptions = {}): Promise<unknown> {
      const { text } = await send(input, { ...request, accept: 'json' });
      if (text.trim() === '') return null;
      try {
        return JSON.parse(text) as unknown;
      } catch {
        throw new SourceUnavailableError(`${what} answered with something that is not JSON`);
      }
    },
    /** The 2xx answer as text (XML is parsed by the connector that needs it). */
    async text(input: string | URL, request: SourceRequestOptions = {}): Promise<string> {
      return (await send(input, { accept: 'text', ...request })).text;
    },
  };
}

export type SourceClient = ReturnType<typeof createSourceClient>;
