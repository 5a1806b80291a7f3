import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { homeAssistantClassifier } from '../../src/connectors/home-assistant/home-assistant-classifier.ts';
import { defaultClassifier, statusMeans } from '../../src/connectors/kit/classifiers.ts';
import { createSourceClient } from '../../src/connectors/kit/source-client.ts';
import {
  SourceAuthError,
  SourceCursorExpiredError,
  SourceRateLimitedError,
  SourceRejectedError,
  SourceTokenExpiredError,
  SourceUnavailableError,
} from '../../src/connectors/kit/source-errors.ts';
import { createOutbound } from '@pcg/shared/outbound';
import { startAnsweringServer } from './answering-server.ts';

const json = (status: number, body: unknown, headers: Record<string, string> = {}) => ({
  status,
  headers: { 'content-type': 'application/json', ...headers },
  body: JSON.stringify(body),
});
const googleError = (code: number, reason: string) => json(code, { error: { code, message: 'quota', errors: [{ domain: 'usageLimits', reason, message: 'x' }] } });

let source: Awaited<ReturnType<typeof startAnsweringServer>>;
let other: Awaited<ReturnType<typeof startAnsweringServer>>;

beforeAll(async () => {
  other = await startAnsweringServer({ '/landed': { status: 200, body: '{"landed":true}' } });
  source = await startAnsweringServer({
    '/gmail-quota': googleError(403, 'rateLimitExceeded'),
    '/gmail-user-quota': googleError(403, 'userRateLimitExceeded'),
    '/gmail-forbidden': googleError(403, 'insufficientPermissions'),
    '/graph-401': json(401, { error: { code: 'InvalidAuthenticationToken', message: 'Access token has expired.' } }),
    '/graph-410': json(410, { error: { code: 'SyncStateNotFound', message: 'gone' } }),
    '/plaid-login': json(400, { error_type: 'ITEM_ERROR', error_code: 'ITEM_LOGIN_REQUIRED', error_message: 'login required', display_message: null }),
    '/plaid-bad-input': json(400, { error_type: 'INVALID_INPUT', error_code: 'INVALID_FIELD', error_message: 'bad field' }),
    '/calendar-410': googleError(410, 'fullSyncRequired'),
    '/people-expired': json(400, { error: { code: 400, status: 'FAILED_PRECONDITION', details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'EXPIRED_SYNC_TOKEN' }] } }),
    '/dav-token': { status: 403, headers: { 'content-type': 'application/xml' }, body: '<?xml version="1.0"?><d:error xmlns:d="DAV:"><d:valid-sync-token/></d:error>' },
    '/gmail-history': json(404, { error: { code: 404, message: 'Requested entity was not found.' } }),
    '/busy': { status: 503, headers: { 'retry-after': '7' }, body: 'busy' },
    '/broken': { status: 502, body: 'bad gateway' },
    '/slow-down': { status: 429, headers: { 'retry-after': '3' }, body: '' },
    '/hub-401': json(401, { message: 'Unauthorized' }),
    '/hub-403': json(403, { message: 'Forbidden' }),
    '/echo': (seen) => ({ status: seen.method === 'PROPFIND' ? 207 : 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(seen) }),
    '/hang': 'hang',
    '/to-echo-307': { status: 307, headers: { location: '/echo' } },
    '/to-echo-303': { status: 303, headers: { location: '/echo' } },
    '/loop': { status: 302, headers: { location: '/loop' } },
    '/big': { status: 200, headers: { 'content-type': 'application/json' }, body: `"${'x'.repeat(2047)}"` },
    '/big-error': { status: 500, body: 'x'.repeat(2049) },
  });
  source.answers['/to-other'] = { status: 302, headers: { location: `${other.base}/landed` } };
});

afterAll(async () => {
  await source?.close();
  await other?.close();
});

const client = (options: Partial<Parameters<typeof createSourceClient>[0]> = {}) =>
  createSourceClient({ what: 'the source', classifier: defaultClassifier, timeoutMs: 2_000, ...options });

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.fail('the request should have failed'),
    (error: unknown) => error,
  );
}

describe('the default classifier reads the providers’ error bodies before their statuses', () => {
  it("Gmail's 403 rateLimitExceeded and userRateLimitExceeded are rate limited, not a sign-in", async () => {
    for (const path of ['/gmail-quota', '/gmail-user-quota']) {
      const error = await failure(client().json(`${source.base}${path}`));
      expect(error).toBeInstanceOf(SourceRateLimitedError);
      expect((error as SourceRateLimitedError).retryAfterMs).toBe(60_000);
    }
  });

  it('a 403 without a quota reason needs sign-in', async () => {
    expect(await failure(client().json(`${source.base}/gmail-forbidden`))).toBeInstanceOf(SourceAuthError);
  });

  it("Graph's 401 asks for a token refresh, not a new sign-in", async () => {
    const error = await failure(client().json(`${source.base}/graph-401`));
    expect(error).toBeInstanceOf(SourceTokenExpiredError);
    expect(error).not.toBeInstanceOf(SourceAuthError);
  });

  it("Plaid's 400 ITEM_LOGIN_REQUIRED needs sign-in; another Plaid 400 is a rejection", async () => {
    expect(await failure(client().json(`${source.base}/plaid-login`))).toBeInstanceOf(SourceAuthError);
    const rejected = await failure(client().json(`${source.base}/plaid-bad-input`));
    expect(rejected).toBeInstanceOf(SourceRejectedError);
    expect((rejected as SourceRejectedError).detail).toBe('bad field');
  });

  it('Calendar 410, Graph 410, People EXPIRED_SYNC_TOKEN and a WebDAV valid-sync-token error are an expired cursor', async () => {
    for (const path of ['/calendar-410', '/graph-410', '/people-expired', '/dav-token']) {
      expect(await failure(client().json(`${source.base}${path}`)), path).toBeInstanceOf(SourceCursorExpiredError);
    }
  });

  it("a request may read a status its own way: Gmail's 404 on history is an expired cursor, elsewhere a rejection", async () => {
    const url = `${source.base}/gmail-history`;
    expect(await failure(client().json(url, { classify: statusMeans(404, { kind: 'cursor_expired' }) }))).toBeInstanceOf(SourceCursorExpiredError);
    expect(await failure(client().json(url))).toBeInstanceOf(SourceRejectedError);
  });

  it('503 with Retry-After is retried no sooner than asked; 502 is retried; 429 carries its Retry-After', async () => {
    const busy = await failure(client().json(`${source.base}/busy`));
    expect(busy).toBeInstanceOf(SourceUnavailableError);
    expect((busy as SourceUnavailableError).retryAfterMs).toBe(7_000);
    const broken = await failure(client().json(`${source.base}/broken`));
    expect(broken).toBeInstanceOf(SourceUnavailableError);
    expect((broken as SourceUnavailableError).retryAfterMs).toBeUndefined();
    const limited = await failure(client().json(`${source.base}/slow-down`));
    expect(limited).toBeInstanceOf(SourceRateLimitedError);
    expect((limited as SourceRateLimitedError).retryAfterMs).toBe(3_000);
  });
});

describe("the hub's classifier", () => {
  it('reads 401 and 403 as needs sign-in (its long-lived token cannot be refreshed)', async () => {
    const hub = client({ classifier: homeAssistantClassifier, what: 'the hub' });
    for (const path of ['/hub-401', '/hub-403']) {
      const error = await failure(hub.json(`${source.base}${path}`));
      expect(error).toBeInstanceOf(SourceAuthError);
      expect((error as Error).message).toMatch(/^the hub refused the credentials \(HTTP 40[13]\)$/);
    }
    expect(await failure(hub.json(`${source.base}/slow-down`))).toBeInstanceOf(SourceRateLimitedError);
    expect(await failure(hub.json(`${source.base}/busy`))).toBeInstanceOf(SourceUnavailableError);
  });
});

describe('requests', () => {
  it('sends any method with an XML body and returns a 207 as text', async () => {
    const xml = '<d:propfind xmlns:d="DAV:"><d:prop><d:current-user-principal/></d:prop></d:propfind>';
    const answer = await client().send(`${source.base}/echo`, { method: 'PROPFIND', headers: { depth: '0' }, body: { xml }, accept: 'xml' });
    expect(answer.status).toBe(207);
    const seen = JSON.parse(answer.text) as { method: string; headers: Record<string, string>; body: string };
    expect(seen).toMatchObject({ method: 'PROPFIND', body: xml, headers: { depth: '0', 'content-type': 'application/xml; charset=utf-8' } });
    expect(seen.headers.accept).toContain('application/xml');
  });

  it('sends JSON, form and text bodies with their types', async () => {
    const viaJson = (await client().json(`${source.base}/echo`, { method: 'POST', body: { json: { a: 1 } } })) as { body: string; headers: Record<string, string> };
    expect(viaJson).toMatchObject({ body: '{"a":1}', headers: { 'content-type': 'application/json' } });
    const viaForm = (await client().json(`${source.base}/echo`, { method: 'POST', body: { form: { grant_type: 'refresh_token', scope: 'a b' } } })) as { body: string; headers: Record<string, string> };
    expect(viaForm).toMatchObject({ body: 'grant_type=refresh_token&scope=a+b', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    const viaText = (await client().json(`${source.base}/echo`, { method: 'REPORT', body: { text: 'BEGIN', contentType: 'text/calendar' } })) as { method: string; body: string };
    expect(viaText).toMatchObject({ method: 'REPORT', body: 'BEGIN' });
  });

  it('follows a 307 keeping method, body and credential on the same origin; a 303 goes on as a GET', async () => {
    const kept = (await client().json(`${source.base}/to-echo-307`, { method: 'POST', body: { json: { k: 1 } }, auth: { authorization: 'Bearer t' } })) as {
      method: string;
      body: string;
      headers: Record<string, string>;
    };
    expect(kept).toMatchObject({ method: 'POST', body: '{"k":1}', headers: { authorization: 'Bearer t' } });
    const switched = (await client().json(`${source.base}/to-echo-303`, { method: 'POST', body: { json: { k: 1 } } })) as { method: string; body: string };
    expect(switched).toMatchObject({ method: 'GET', body: '' });
  });

  it('never carries the credential to another origin without a guard, and a guard refuses a hop before anything is sent', async () => {
    const before = other.seen.length;
    expect(await client().json(`${source.base}/to-other`, { auth: { authorization: 'Bearer secret' } })).toEqual({ landed: true });
    expect(other.seen[before]?.headers.authorization).toBeUndefined();

    const checked: string[] = [];
    const guard = (url: URL) => {
      checked.push(url.pathname);
      return url.origin === source.base ? undefined : 'outside the allowed hosts';
    };
    const refused = await failure(client({ guard }).json(`${source.base}/to-other`, { auth: { authorization: 'Bearer secret' } }));
    expect(refused).toBeInstanceOf(SourceRejectedError);
    expect((refused as Error).message).toContain('outside the allowed hosts');
    expect(checked).toEqual(['/to-other', '/landed']);
    expect(other.seen.length).toBe(before + 1);
  });

  it('gives up on a redirect loop after the allowed hops', async () => {
    const before = source.seen.filter((seen) => seen.path === '/loop').length;
    const error = await failure(client({ maxRedirects: 3 }).json(`${source.base}/loop`));
    expect(error).toBeInstanceOf(SourceRejectedError);
    expect(source.seen.filter((seen) => seen.path === '/loop').length - before).toBe(4);
  });

  it('a source that does not answer is a timeout to retry; an abort is rethrown as the caller’s own reason', async () => {
    const timedOut = await failure(client({ timeoutMs: 200 }).json(`${source.base}/hang`));
    expect(timedOut).toBeInstanceOf(SourceUnavailableError);
    expect((timedOut as Error).message).toBe('the source did not answer within 0.2 s');

    const controller = new AbortController();
    const reason = new Error('shutting down');
    const pending = failure(client({ signal: controller.signal }).json(`${source.base}/hang`));
    setTimeout(() => controller.abort(reason), 50);
    expect(await pending).toBe(reason);
  });
});

/** A fetch whose answer streams `chunks` without a content-length (as a chunked answer arrives). */
function streamingFetch(chunks: string[], pulled: { count: number }): typeof fetch {
  return async () => {
    let index = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled.count += 1;
        const chunk = chunks[index++];
        if (chunk === undefined) controller.close();
        else controller.enqueue(new TextEncoder().encode(chunk));
      },
    });
    return new Response(body, { status: 200, headers: { 'content-type': 'text/plain' } });
  };
}

describe('answer size (issue 43: the source client caps what it reads)', () => {
  const tooLarge = 'the source answered with more than 2 KiB, the most the gateway reads of one answer';

  it('refuses a 2xx or an error answer declared larger than the cap, naming the limit and the source', async () => {
    for (const path of ['/big', '/big-error']) {
      const error = await failure(client({ maxAnswerBytes: 2048 }).text(`${source.base}${path}`));
      expect(error).toBeInstanceOf(SourceRejectedError);
      expect((error as Error).message).toBe(tooLarge);
    }
    expect(await client({ maxAnswerBytes: 2049 }).json(`${source.base}/big`)).toBe('x'.repeat(2047));
  });

  it('stops reading an answer without a length once it passes the cap; one of exactly the cap is read whole', async () => {
    const pulled = { count: 0 };
    const endless = ['x'.repeat(1024), 'x'.repeat(1024), 'x', ...Array.from({ length: 100 }, () => 'x'.repeat(1024))];
    const error = await failure(client({ maxAnswerBytes: 2048, fetch: streamingFetch(endless, pulled) }).text('http://source.test/stream'));
    expect((error as Error).message).toBe(tooLarge);
    expect(pulled.count).toBeLessThan(10);

    const exact = await client({ maxAnswerBytes: 2048, fetch: streamingFetch(['é'.repeat(512), 'x'.repeat(1024)], { count: 0 }) }).text('http://source.test/stream');
    expect(exact).toBe('é'.repeat(512) + 'x'.repeat(1024));
  });

  it('caps answers read through the outbound policy’s fetch as well', async () => {
    const outbound = createOutbound({ ownPorts: [] });
    try {
      const error = await failure(client({ maxAnswerBytes: 2048, fetch: outbound.fetch }).text(`${source.base}/big`));
      expect((error as Error).message).toBe(tooLarge);
    } finally {
      await outbound.close();
    }
  });
});
