import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createConnectionQueries } from '@pcg/shared/connections';
import { openCredentials } from '@pcg/shared/crypto';
import { createDatabase, sql, type DatabasePool } from '@pcg/shared/db';
import { registerExtraProvider } from '@pcg/shared/providers';
import { createSignInQueries } from '@pcg/shared/sign-ins';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { z } from 'zod';
import { startOAuthProviderDouble, type OAuthProviderDouble, type TokenFailure } from '../../../../test/support/oauth-provider-double.ts';
import { insertOAuthTestSignIn, oauthTestProvider } from '../../../../test/support/oauth-test-provider.ts';
import type { ConnectorContext, RefreshCredentials, SyncOutcome } from '../../src/connectors/connector-types.ts';
import { SourceAuthError, SourceCursorExpiredError, SourceTokenExpiredError, SourceUnavailableError } from '../../src/connectors/kit/source-errors.ts';
import { buildConnectorContext } from '../../src/run/connector-context.ts';
import { readFailure, withTokenRefresh } from '../../src/run/failure-mapper.ts';
import { createTokenRefresher } from '../../src/sign-ins/token-refresh.ts';
import { createConnectionStore } from '../../src/sync/connection-store.ts';
import { syncWithResync } from '../../src/sync/full-resync.ts';
import { entityRows, insertHubConnection, TEST_KEY } from '../helpers.ts';

const testEnv = useTestEnvironment();
const OBJECT = 'home.entity';

const entity = (id: string, state = 'on') => ({ source_id: id, entity_id: id, domain: id.split('.')[0], state });

/** A scripted source: its entities, whether it still takes the cursor, and how often it was read. */
function scriptedSource(ids: string[]) {
  const source = { ids, cursorValid: true, failFullAfter: undefined as number | undefined, calls: [] as Array<'full' | 'incremental'> };
  const sync = async (context: ConnectorContext): Promise<SyncOutcome> => {
    if (context.cursor !== null) {
      source.calls.push('incremental');
      if (!source.cursorValid) throw new SourceCursorExpiredError('the source no longer accepts the sync cursor (HTTP 410)');
      return { mode: 'incremental', cursor: 'c-next' };
    }
    source.calls.push('full');
    const listed = source.failFullAfter === undefined ? source.ids : source.ids.slice(0, source.failFullAfter);
    await context.cache.upsert(OBJECT, listed.map((id) => entity(id)));
    if (source.failFullAfter !== undefined) throw new SourceUnavailableError('the source answered HTTP 503');
    return { mode: 'full', cursor: 'c-full' };
  };
  return { source, sync };
}

async function contextFor(connectionId: string, refreshCredentials?: RefreshCredentials) {
  const store = createConnectionStore(testEnv.db);
  const row = await store.load(connectionId);
  if (!row) throw new Error('no connection');
  return buildConnectorContext({ store, credentialsKey: TEST_KEY, refreshCredentials }, row, {
    signal: new AbortController().signal,
    requestTimeoutMs: 1_000,
    log: createCapturingLogger().log,
  });
}

describe('an expired cursor', () => {
  it('gives one full resync: nothing duplicated, rows kept with their ids, rows gone at the source removed', async () => {
    const id = await insertHubConnection(testEnv.db, { baseUrl: 'http://127.0.0.1:9', token: 't' });
    const { source, sync } = scriptedSource(['light.a', 'light.b', 'light.c']);
    await syncWithResync(await contextFor(id), sync, [OBJECT]);
    const before = await entityRows(testEnv.db, id);

    source.ids = ['light.a', 'light.c', 'light.d'];
    source.cursorValid = false;
    source.calls = [];
    const context = await contextFor(id);
    context.cursor = 'c-old';
    const outcome = await syncWithResync(context, sync, [OBJECT]);

    expect(outcome).toEqual({ mode: 'full', cursor: 'c-full' });
    expect(source.calls).toEqual(['incremental', 'full']);
    const after = await entityRows(testEnv.db, id);
    expect(after.map((row) => row.source_id)).toEqual(['light.a', 'light.c', 'light.d']);
    const idOf = (rows: typeof before, sourceId: string) => rows.find((row) => row.source_id === sourceId)?.id;
    expect(idOf(after, 'light.a')).toBe(idOf(before, 'light.a'));
    expect(idOf(after, 'light.c')).toBe(idOf(before, 'light.c'));
    expect(context.cache.counts).toEqual({ written: 3, removed: 1 });
  });

  it('a full resync cut short removes nothing', async () => {
    const id = await insertHubConnection(testEnv.db, { baseUrl: 'http://127.0.0.1:9', token: 't' });
    const { source, sync } = scriptedSource(['light.a', 'light.b', 'light.c']);
    await syncWithResync(await contextFor(id), sync, [OBJECT]);
    source.cursorValid = false;
    source.failFullAfter = 1;
    const context = await contextFor(id);
    context.cursor = 'c-old';
    await expect(syncWithResync(context, sync, [OBJECT])).rejects.toBeInstanceOf(SourceUnavailableError);
    expect((await entityRows(testEnv.db, id)).map((row) => row.source_id)).toEqual(['light.a', 'light.b', 'light.c']);
  });

  it('a cursor that expires again during the full resync is not resynced twice', async () => {
    const id = await insertHubConnection(testEnv.db, { baseUrl: 'http://127.0.0.1:9', token: 't' });
    let calls = 0;
    const context = await contextFor(id);
    context.cursor = 'c-old';
    const expired = async (): Promise<SyncOutcome> => {
      calls += 1;
      throw new SourceCursorExpiredError('expired');
    };
    await expect(syncWithResync(context, expired, [OBJECT])).rejects.toBeInstanceOf(SourceCursorExpiredError);
    expect(calls).toBe(2);
  });
});

describe('an expired access token', () => {
  const tokenOf = (context: ConnectorContext) => (context.credentials as { token: string }).token;

  it('is refreshed once, and the operation runs once more with the new credentials', async () => {
    const id = await insertHubConnection(testEnv.db, { baseUrl: 'http://127.0.0.1:9', token: 'stale' });
    const refreshes: string[] = [];
    const context = await contextFor(id, async (connection) => {
      refreshes.push(connection.id);
      return { ok: true, credentials: { baseUrl: 'http://127.0.0.1:9', token: 'fresh' } };
    });
    const seen: string[] = [];
    const answer = await withTokenRefresh(context, async () => {
      seen.push(tokenOf(context));
      if (tokenOf(context) !== 'fresh') throw new SourceTokenExpiredError('the source refused the access token (HTTP 401)');
      return 'read';
    });
    expect(answer).toBe('read');
    expect(seen).toEqual(['stale', 'fresh']);
    expect(refreshes).toEqual([id]);
  });

  it('a refused refresh needs sign-in; a refresh that cannot run is retried; a token refused right after a refresh needs sign-in', async () => {
    const id = await insertHubConnection(testEnv.db, { baseUrl: 'http://127.0.0.1:9', token: 'stale' });
    const expiredAlways = async () => {
      throw new SourceTokenExpiredError('the source refused the access token (HTTP 401)');
    };
    const refused = await withTokenRefresh(await contextFor(id, async () => ({ ok: false, reason: 'refused', message: 'invalid_grant' })), expiredAlways).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(SourceAuthError);
    expect(readFailure(refused).kind).toBe('needs_sign_in');

    const unavailable = await withTokenRefresh(await contextFor(id, async () => ({ ok: false, reason: 'unavailable', message: 'token endpoint answered HTTP 503' })), expiredAlways).catch((error: unknown) => error);
    expect(unavailable).toBeInstanceOf(SourceUnavailableError);
    expect(readFailure(unavailable).kind).toBe('retry');

    let refreshes = 0;
    const again = await withTokenRefresh(
      await contextFor(id, async () => {
        refreshes += 1;
        return { ok: true, credentials: { token: 'fresh' } };
      }),
      expiredAlways,
    ).catch((error: unknown) => error);
    expect(again).toBeInstanceOf(SourceAuthError);
    expect(refreshes).toBe(1);
  });

  it('with no refresher wired (the hub), an expired token needs sign-in', async () => {
    const id = await insertHubConnection(testEnv.db, { baseUrl: 'http://127.0.0.1:9', token: 'stale' });
    const error = await withTokenRefresh(await contextFor(id), async () => {
      throw new SourceTokenExpiredError('expired');
    }).catch((caught: unknown) => caught);
    expect(readFailure(error)).toMatchObject({ kind: 'needs_sign_in' });
  });
});

describe('a token refresh (issue 31 items 13 and 17)', () => {
  const CLIENT = { clientId: 'refresh-client', clientSecret: 'refresh-secret' };
  let double: OAuthProviderDouble;

  beforeAll(async () => {
    double = await startOAuthProviderDouble(CLIENT);
    registerExtraProvider(oauthTestProvider(double.url));
    // A fault the test switches on per sign-in: the next `failures` writes of new credentials raise `code`.
    // The attempts are counted by a sequence, which a rolled-back write does not undo.
    await testEnv.db.query(sql.unsafe`CREATE TABLE token_write_faults (sign_in_id uuid PRIMARY KEY, failures int NOT NULL, code text NOT NULL)`);
    await testEnv.db.query(sql.unsafe`CREATE SEQUENCE token_write_attempts`);
    await testEnv.db.query(sql.unsafe`
      CREATE FUNCTION token_write_fault() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE fault token_write_faults;
      BEGIN
        SELECT * INTO fault FROM token_write_faults WHERE sign_in_id = NEW.id;
        IF FOUND AND nextval('token_write_attempts') <= fault.failures THEN
          RAISE EXCEPTION USING ERRCODE = fault.code, MESSAGE = 'the test made this token write fail';
        END IF;
        RETURN NEW;
      END $$`);
    await testEnv.db.query(sql.unsafe`
      CREATE TRIGGER token_write_fault BEFORE UPDATE OF credentials ON sign_ins
      FOR EACH ROW WHEN (OLD.credentials IS DISTINCT FROM NEW.credentials) EXECUTE FUNCTION token_write_fault()`);
  });
  afterAll(async () => {
    await testEnv.db.query(sql.unsafe`DROP TRIGGER IF EXISTS token_write_fault ON sign_ins`);
    await double?.close();
  });
  beforeEach(async () => {
    await testEnv.db.query(sql.unsafe`SELECT setval('token_write_attempts', 1, false)`);
  });

  const refresherOn = (db: DatabasePool, log = createCapturingLogger().log) => createTokenRefresher({ db, credentialsKey: TEST_KEY, log, requestTimeoutMs: 5_000 });
  const signIn = (expiresAt?: number) => insertOAuthTestSignIn(testEnv.db, double, { client: CLIENT, credentialsKey: TEST_KEY, accountId: randomUUID(), ...(expiresAt === undefined ? {} : { expiresAt }) });
  const stored = async (signInId: string) => openCredentials(TEST_KEY, (await createSignInQueries(testEnv.db).sealed(signInId)) ?? Buffer.alloc(0), signInId);
  const failTokenWrites = (signInId: string, failures: number, code: string) =>
    testEnv.db.query(sql.unsafe`INSERT INTO token_write_faults (sign_in_id, failures, code) VALUES (${signInId}::uuid, ${failures}, ${code})`);
  const writeAttempts = () => testEnv.db.oneFirst(sql.type(z.object({ tried: z.coerce.number() }))`SELECT last_value - 1 + is_called::int AS tried FROM token_write_attempts`);
  const advisoryLocks = (granted: boolean) =>
    testEnv.db.oneFirst(sql.type(z.object({ count: z.coerce.number() }))`
      SELECT count(*) AS count FROM pg_locks
      WHERE locktype = 'advisory' AND granted = ${granted} AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`);

  it.each([
    // Microsoft identity platform, token endpoint errors: an expired or revoked refresh token is `invalid_grant`
    // with its AADSTS code in the description (AADSTS70008: expired through inactivity).
    ['invalid_grant with an AADSTS code', 'needs_sign_in', 'needs_sign_in', { status: 400, body: { error: 'invalid_grant', error_description: 'AADSTS70008: The refresh token has expired due to inactivity.' } }],
    // Same table: `interaction_required` (another authentication step, e.g. MFA) needs the person again.
    ['interaction_required', 'needs_sign_in', 'needs_sign_in', { status: 400, body: { error: 'interaction_required', error_description: 'AADSTS50076: multi-factor authentication is required.' } }],
    // RFC 6749 5.2: `unauthorized_client`, the client may not use this grant type (Microsoft: AADSTS700016, app not found).
    ['unauthorized_client', 'app_refused', 'active', { status: 400, body: { error: 'unauthorized_client', error_description: 'AADSTS700016: Application was not found in the directory.' } }],
    // RFC 6749 5.2: `invalid_scope` refuses the request, not the grant.
    ['invalid_scope', 'rejected', 'active', { status: 400, body: { error: 'invalid_scope' } }],
    // RFC 6585 4: a 429 with Retry-After in seconds, with no body.
    ['429 with Retry-After and no body', 'rate_limited', 'active', { status: 429, retryAfter: '7' }],
  ] satisfies Array<[string, string, string, TokenFailure]>)('answered %s, is read as %s and leaves the sign-in %s', async (_label, kind, status, failure) => {
    const { signInId, credentials } = await signIn();
    double.state.tokenFailures = [failure];
    const error = await refresherOn(testEnv.db)
      .refreshAccessToken(signInId, { rejected: credentials.accessToken })
      .catch((caught: unknown) => caught);
    expect(readFailure(error)).toMatchObject({ kind, ...(kind === 'rate_limited' ? { retryAfterMs: 7_000 } : {}) });
    expect((await createSignInQueries(testEnv.db).get(signInId))?.status).toBe(status);
    // Whatever the answer, the stored tokens are the ones the sign-in had.
    expect(await stored(signInId)).toEqual(credentials);
  });

  it('asked by two workers at once, sends one refresh request; the second waits for the lock, re-reads, and both end with the new token', async () => {
    const { signInId, credentials } = await signIn(Date.now() - 1_000);
    const otherWorker = await createDatabase(testEnv.databaseUrl, { maximumPoolSize: 2 });
    const release = double.holdRefreshes();
    try {
      const before = double.state.refreshRequests;
      // One worker was refused the access token; the other finds it expired.
      const both = Promise.all([
        refresherOn(testEnv.db).refreshAccessToken(signInId, { rejected: credentials.accessToken }),
        refresherOn(otherWorker.pool).refreshAccessToken(signInId),
      ]);
      // While the provider holds the first refresh, the second worker is waiting for the sign-in's lock.
      await waitFor(async () => ((await advisoryLocks(false)) === 1 && double.state.refreshRequests > before ? true : undefined), 10_000, 'one refresh under the lock and one waiting');
      release();
      const [first, second] = await both;
      expect(double.state.refreshRequests - before).toBe(1);
      expect(first.accessToken).not.toBe(credentials.accessToken);
      expect(second).toEqual(first);
      expect(await stored(signInId)).toEqual(first);
      // The session-level lock went back with its connection released.
      expect(await advisoryLocks(true)).toBe(0);
    } finally {
      release();
      await otherWorker.end();
    }
  });

  it.each([
    ['a serialization failure, which the pool answers by running the transaction again', '40001'],
    ['an error of the write itself', 'P0001'],
  ])('is stored after a write that failed once (%s), and the provider is asked once', async (_label, code) => {
    const { signInId, credentials } = await signIn();
    await failTokenWrites(signInId, 1, code);
    const before = double.state.refreshRequests;
    const renewed = await refresherOn(testEnv.db).refreshAccessToken(signInId, { rejected: credentials.accessToken });
    expect(double.state.refreshRequests - before).toBe(1);
    expect(await writeAttempts()).toBe(2);
    expect(renewed.accessToken).not.toBe(credentials.accessToken);
    expect(await stored(signInId)).toEqual(renewed);
    expect((await createSignInQueries(testEnv.db).get(signInId))?.status).toBe('active');
  });

  it('that keeps failing to store the rotated tokens leaves the sign-in and its connection needing sign-in, with the reason logged', async () => {
    const { signInId, connectionId, credentials } = await signIn();
    await failTokenWrites(signInId, 1_000, 'P0001');
    const log = createCapturingLogger();
    const before = double.state.refreshRequests;
    const error = await refresherOn(testEnv.db, log.log)
      .refreshAccessToken(signInId, { rejected: credentials.accessToken })
      .catch((caught: unknown) => caught);
    expect(readFailure(error).kind).toBe('needs_sign_in');
    expect(double.state.refreshRequests - before).toBe(1);
    expect(await writeAttempts()).toBeGreaterThan(1);
    const row = await createSignInQueries(testEnv.db).get(signInId);
    expect(row).toMatchObject({ status: 'needs_sign_in', last_error: expect.stringMatching(/could not store the new tokens/) });
    expect(await createConnectionQueries(testEnv.db).get(connectionId)).toMatchObject({ status: 'needs_sign_in', last_error: row?.last_error });
    const logged = log.lines().map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(logged).toContainEqual(expect.objectContaining({ level: 50, signInId, status: 'needs_sign_in', reason: row?.last_error }));
  });
});
