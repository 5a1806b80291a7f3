import { describe, expect, it } from 'vitest';
import { createCapturingLogger, useTestEnvironment } from '@pcg/testkit/testing';
import type { ConnectorContext, RefreshCredentials, SyncOutcome } from '../../src/connectors/connector-types.ts';
import { SourceAuthError, SourceCursorExpiredError, SourceTokenExpiredError, SourceUnavailableError } from '../../src/connectors/kit/source-errors.ts';
import { buildConnectorContext } from '../../src/run/connector-context.ts';
import { readFailure, withTokenRefresh } from '../../src/run/failure-mapper.ts';
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
