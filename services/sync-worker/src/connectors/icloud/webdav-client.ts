import { XMLParser } from 'fast-xml-parser';
import { createSourceClient } from '../kit/source-client.ts';
import { SourceUnavailableError } from '../kit/source-errors.ts';
import { icloudClassifier } from './icloud-classifier.ts';
import { icloudAddressProblem } from './icloud-guard.ts';

/** One `<response>` of a multistatus: its href, its status (when the response has one) and its 200 props. */
export type DavResponse = { href: string; status: number | undefined; props: Record<string, unknown> };
export type Multistatus = { responses: DavResponse[]; syncToken: string | undefined };

// Namespaces are dropped: the DAV, CalDAV, CardDAV and Apple element names this connector reads do not
// collide. Values stay strings: a sync token "0" and an ETag are opaque, never numbers.
const parser = new XMLParser({
  removeNSPrefix: true,
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  parseTagValue: false,
  trimValues: true,
  isArray: (name) => name === 'response' || name === 'propstat' || name === 'href',
});

function statusCode(line: unknown): number | undefined {
  const match = typeof line === 'string' ? /^HTTP\/\d(?:\.\d)?\s+(\d{3})/.exec(line) : null;
  return match ? Number(match[1]) : undefined;
}

export const record = (value: unknown): Record<string, unknown> => (value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {});
export const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : value === undefined ? [] : [value]);

/** Text of an element that may be a string or `{ '#text': … }`; undefined when absent. */
export function text(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  const inner = record(value)['#text'];
  return typeof inner === 'string' ? inner : undefined;
}

/** The first href inside a property such as `current-user-principal` or `calendar-home-set`. */
export function hrefOf(value: unknown): string | undefined {
  return text(list(record(value).href)[0]);
}

export function parseMultistatus(xml: string): Multistatus {
  let document: unknown;
  try {
    document = parser.parse(xml);
  } catch {
    throw new SourceUnavailableError('iCloud answered with XML it could not read');
  }
  const multistatus = record(record(document).multistatus);
  const responses = list(multistatus.response).map((raw) => {
    const response = record(raw);
    const props: Record<string, unknown> = {};
    for (const propstat of list(response.propstat).map(record)) {
      const code = statusCode(propstat.status);
      if (code !== undefined && code >= 200 && code < 300) Object.assign(props, record(propstat.prop));
    }
    return { href: text(list(response.href)[0]) ?? '', status: statusCode(response.status), props };
  });
  return { responses, syncToken: text(multistatus['sync-token']) };
}

export type WebDavOptions = {
  guardedFetch: typeof fetch;
  timeoutMs: number;
  signal?: AbortSignal;
};

/**
 * The few WebDAV requests the connector needs (PROPFIND and REPORT), through the kit's source client whose
 * transport is the iCloud guard: the guard checks every hop and attaches the credential, so none is passed here.
 */
export function createWebDav(options: WebDavOptions) {
  const client = createSourceClient({
    what: 'iCloud',
    classifier: icloudClassifier,
    timeoutMs: options.timeoutMs,
    signal: options.signal,
    fetch: options.guardedFetch,
    guard: icloudAddressProblem,
  });
  async function request(method: 'PROPFIND' | 'REPORT', url: URL, depth: '0' | '1', body: string): Promise<Multistatus> {
    const answer = await client.send(url, { method, headers: { depth }, body: { xml: `<?xml version="1.0" encoding="utf-8"?>${body}` }, accept: 'xml' });
    return parseMultistatus(answer.text);
  }
  return {
    propfind: (url: URL, depth: '0' | '1', props: string, namespaces = '') =>
      request('PROPFIND', url, depth, `<d:propfind xmlns:d="DAV:"${namespaces}><d:prop>${props}</d:prop></d:propfind>`),
    report: (url: URL, depth: '0' | '1', body: string) => request('REPORT', url, depth, body),
  };
}

export type WebDav = ReturnType<typeof createWebDav>;

/** XML-escapes a value put into a request body (an href, a sync token). */
export function xmlText(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
