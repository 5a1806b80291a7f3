import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@pcg/shared/config';
import { createConnectionQueries } from '@pcg/shared/connections';
import { GMAIL_METADATA_SCOPE } from '@pcg/shared/providers';
import { NO_SECTORS_GRANTED } from '@pcg/shared/sign-ins';
import { GMAIL_DOUBLE_ADDRESS, startGoogleDouble, type GoogleDouble } from '@pcg/testkit/doubles';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { startConsole, type RunningConsole } from '../../services/console/src/service.ts';
import { syncWorkerConfigSchema } from '../../services/sync-worker/src/config.ts';
import { GMAIL_GET_CONCURRENCY } from '../../services/sync-worker/src/connectors/gmail/gmail-sync.ts';
import { startSyncWorker, type RunningSyncWorker } from '../../services/sync-worker/src/service.ts';
import { signInThroughConsole, syncThroughConsole } from '../support/console-sign-in.ts';

// Gmail end to end (issue 17): its own Google sign-in through the Console, the sync-worker's full and
// history syncs against the local Google, and what the operator's reads return.
const testEnv = useTestEnvironment();
const key = randomBytes(32);
let google: GoogleDouble;
let consoleService: RunningConsole;
let worker: RunningSyncWorker;

type Row = Record<string, unknown>;
async function read(where: unknown[] = []): Promise<Row[]> {
  const answer = await fetch(`${consoleService.address}/api/data/mail`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ object: 'mail.message', where, limit: 200 }),
  });
  expect(answer.status).toBe(200);
  return ((await answer.json()) as { rows: Row[] }).rows;
}

async function signIn(denied: string[]) {
  google.state.deniedScopes = denied;
  const signedIn = await signInThroughConsole(consoleService.address, 'gmail');
  expect(signedIn.startStatus).toBe(302);
  return signedIn;
}

const connection = async (id: string) => createConnectionQueries(testEnv.db).get(id);
const syncAndWait = (id: string) => syncThroughConsole(testEnv.db, consoleService.address, id);
const calls = (from: number, path: string) => google.state.requests.slice(from).filter((call) => call.path === `/gmail/v1/users/me${path}`);
const bySubject = (rows: Row[], subject: string) => rows.filter((row) => row.subject === subject);
/** The double's messages outside SPAM and TRASH: what a full listing holds. */
const visibleIds = () => [...google.gmail.messages.values()].filter((message) => !message.labelIds.some((label) => label === 'SPAM' || label === 'TRASH')).map((message) => message.id).sort();

beforeAll(async () => {
  google = await startGoogleDouble();
  const env = testEnv.env({ CREDENTIALS_KEY: key.toString('base64'), REST_PORT: '0', SOURCE_TIMEOUT_MS: '2000', SYNC_BACKOFF_MS: '100', GOOGLE_BASE_URL: google.url });
  worker = await startSyncWorker(loadConfig(syncWorkerConfigSchema, env), createCapturingLogger('sync-worker').log);
  consoleService = await startConsole(loadConfig(consoleConfigSchema, env), createCapturingLogger('console').log, { audit: { record: () => undefined } });
  const saved = await fetch(`${consoleService.address}/api/connect/gmail/app`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(google.client) });
  expect(saved.status).toBe(204);
});
afterAll(async () => {
  await consoleService?.close();
  await worker?.close();
  await google?.close();
});

describe('Gmail through its own Google sign-in', () => {
  let id = '';

  it('a consent that unticks the mail scope makes no connection and says the sign-in granted no sectors', async () => {
    const answer = await signIn([GMAIL_METADATA_SCOPE]);
    expect(answer.authorize.searchParams.get('scope')?.split(' ').sort()).toEqual([GMAIL_METADATA_SCOPE, 'email', 'openid'].sort());
    expect(answer.authorize.searchParams.get('access_type')).toBe('offline');
    expect(answer.status).toBe(422);
    expect(answer.body.error).toBe(NO_SECTORS_GRANTED);
    expect(await createConnectionQueries(testEnv.db).list()).toEqual([]);
  });

  it('a full sync reads every envelope outside spam and trash with format=metadata, at most 10 messages.get in flight', async () => {
    google.gmail.state.getDelayMs = 60;
    const from = google.state.requests.length;
    const answer = await signIn([]);
    expect(answer.status).toBe(200);
    const connections = answer.body.connections as Array<{ id: string; sector: string }>;
    expect(connections.map((row) => row.sector)).toEqual(['mail']);
    id = connections[0]?.id ?? '';
    await waitFor(async () => ((await connection(id))?.last_synced_at ? true : undefined), 15_000, 'the first mail sync');
    google.gmail.state.getDelayMs = 0;

    const rows = await read();
    expect(rows.map((row) => row.source_id).sort()).toEqual(visibleIds());
    expect(rows.some((row) => row.subject === 'You won')).toBe(false);
    const gets = google.state.requests.slice(from).filter((call) => call.path.startsWith('/gmail/v1/users/me/messages/'));
    expect(gets).toHaveLength(rows.length);
    for (const get of gets) {
      expect(get.query.get('format')).toBe('metadata');
      expect(get.query.getAll('metadataHeaders')).toEqual(['From', 'To', 'Cc', 'Subject', 'Date']);
    }
    expect(calls(from, '/messages').length).toBeGreaterThan(1); // paged with pageToken
    expect(calls(from, '/messages').every((call) => !call.query.has('q'))).toBe(true);
    expect(google.gmail.state.maxInFlight).toBeLessThanOrEqual(GMAIL_GET_CONCURRENCY);
    expect(google.gmail.state.maxInFlight).toBeGreaterThan(1);

    const [notes] = bySubject(rows, 'Engine notes');
    const source = [...google.gmail.messages.values()].find((message) => message.headers.some((header) => header.value === 'Engine notes'));
    expect(notes).toMatchObject({
      account: GMAIL_DOUBLE_ADDRESS,
      folder: 'INBOX',
      from: 'Lovelace, Ada <ada@example.com>',
      from_address: 'ada@example.com',
      from_name: 'Lovelace, Ada',
      to: ['Demo Person <demo.person@example.com>'],
      cc: ['Grace Hopper <grace@example.com>', 'alan@example.com'],
      is_read: false,
      is_starred: true,
      thread_id: source?.threadId,
      received_at: new Date(source?.internalDate ?? 0).toISOString(),
    });
    expect(notes?.labels).toEqual(expect.arrayContaining(['INBOX', 'UNREAD', 'STARRED']));
    expect(bySubject(rows, 'Bernoulli numbers')[0]).toMatchObject({ is_read: true, is_starred: false, labels: ['INBOX', 'Receipts'] });
    const sent = rows.find((row) => row.folder === 'SENT');
    expect(sent).toMatchObject({ subject: 'Re: Engine notes', to: ['Lovelace, Ada <ada@example.com>'], thread_id: bySubject(rows, 'Re: Engine notes').find((row) => row.folder === 'INBOX')?.thread_id });
    expect(bySubject(rows, 'Old thread 20')[0]?.folder).toBe('ARCHIVE');
  });

  it('syncs incrementally from the stored history id: a new message, one read, one starred, one deleted, one moved to trash', async () => {
    const rows = await read();
    const idOf = (subject: string) => String(bySubject(rows, subject)[0]?.source_id);
    const added = google.gmail.add({ from: 'Katherine Johnson <kj@example.com>', subject: 'Trajectories', daysAgo: 0 });
    google.gmail.relabel(idOf('Compiler draft'), { remove: ['UNREAD'] });
    google.gmail.relabel(idOf('Morphogenesis'), { add: ['STARRED'] });
    google.gmail.remove(idOf('Old thread 21'));
    google.gmail.relabel(idOf('Old thread 22'), { add: ['TRASH'] });
    const from = google.state.requests.length;
    await syncAndWait(id);

    expect(calls(from, '/messages')).toHaveLength(0);
    const history = calls(from, '/history');
    expect(history.length).toBeGreaterThan(1); // several pages
    expect(history[0]?.query.get('startHistoryId')).toMatch(/^\d+$/);
    expect(history[0]?.query.getAll('historyTypes').sort()).toEqual(['labelAdded', 'labelRemoved', 'messageAdded', 'messageDeleted']);
    const after = await read();
    expect(after.map((row) => row.source_id).sort()).toEqual(visibleIds());
    expect(bySubject(after, 'Trajectories')[0]).toMatchObject({ source_id: added.id, from_address: 'kj@example.com', is_read: false });
    expect(bySubject(after, 'Compiler draft')[0]?.is_read).toBe(true);
    expect(bySubject(after, 'Morphogenesis')[0]?.is_starred).toBe(true);
    expect(bySubject(after, 'Old thread 21')).toHaveLength(0);
    expect(bySubject(after, 'Old thread 22')).toHaveLength(0);
    // Only the changed messages that still exist were read again: the deleted one is not asked for.
    expect(google.state.requests.slice(from).filter((call) => call.path.startsWith('/gmail/v1/users/me/messages/'))).toHaveLength(4);
  });

  it('a stale history id (404) gives one full resync with no duplicate, and the next sync is incremental again', async () => {
    const before = await read();
    google.gmail.expireHistory();
    const from = google.state.requests.length;
    await syncAndWait(id);
    const history = calls(from, '/history');
    expect(history).toHaveLength(1);
    expect(calls(from, '/messages').filter((call) => !call.query.has('pageToken'))).toHaveLength(1);
    const after = await read();
    expect(after).toHaveLength(before.length);
    expect(new Set(after.map((row) => row.source_id)).size).toBe(after.length);
    expect(await connection(id)).toMatchObject({ status: 'active', last_error: null });
    const next = google.state.requests.length;
    await syncAndWait(id);
    expect(calls(next, '/messages')).toHaveLength(0);
    expect(calls(next, '/history')).toHaveLength(1);
  });

  it('a 429 on one messages.get in the middle of a full sync: the retried sync goes on where it stopped, asks for no stored message again, and keeps the history id of its start', async () => {
    const before = (await read()).map((row) => row.source_id).sort();
    google.gmail.expireHistory();
    // The sixth get is on the second page (four a page): the first page is written, part of the second too.
    google.gmail.state.rateLimitGetAt = google.gmail.state.gets + 6;
    google.gmail.state.onRateLimited = () => void google.gmail.add({ from: 'Mary Somerville <mary@example.com>', subject: 'Connexion of the sciences', daysAgo: 0 });
    const from = google.state.requests.length;
    await syncAndWait(id);
    google.gmail.state.onRateLimited = undefined;
    const asked = google.state.requests.slice(from).filter((call) => call.path.startsWith('/gmail/v1/users/me/messages/')).map((call) => call.path);
    expect(asked).toHaveLength(before.length + 1); // each message once, and the one refused with 429 once more
    expect(new Set(asked).size).toBe(before.length);
    expect(calls(from, '/profile')).toHaveLength(1); // one start, one history id
    expect((await read()).map((row) => row.source_id).sort()).toEqual(before);
    expect(await connection(id)).toMatchObject({ status: 'active', last_error: null });

    // The next start is the history id taken before the listing: the mail that came during the full sync arrives now.
    const next = google.state.requests.length;
    await syncAndWait(id);
    expect(calls(next, '/messages')).toHaveLength(0);
    expect(bySubject(await read(), 'Connexion of the sciences')).toHaveLength(1);
  });

  it('an access token that runs out in the middle of a full sync is refreshed once, and the sync goes on without starting over', async () => {
    const before = await read();
    const refreshes = google.state.refreshes;
    google.gmail.expireHistory();
    google.gmail.state.getDelayMs = 30;
    google.gmail.state.expireAccessTokensAtGet = google.gmail.state.gets + 4;
    const gets = google.gmail.state.gets;
    const from = google.state.requests.length;
    await syncAndWait(id);
    google.gmail.state.getDelayMs = 0;
    expect(google.state.refreshes).toBe(refreshes + 1);
    expect(calls(from, '/messages').filter((call) => !call.query.has('pageToken'))).toHaveLength(1);
    expect(google.gmail.state.gets - gets).toBe(before.length);
    expect(await read()).toHaveLength(before.length);
    expect(await connection(id)).toMatchObject({ status: 'active', last_error: null });
  });

  it('a quota 403 (rateLimitExceeded, userRateLimitExceeded) leaves the connection scheduled and signed in', async () => {
    google.gmail.add({ from: 'Hedy Lamarr <hedy@example.com>', subject: 'Frequency hopping', daysAgo: 0 });
    google.failNext('/gmail/v1/users/me/history', 403, { reason: 'userRateLimitExceeded', headers: { 'retry-after': '1' } });
    google.failNext('/gmail/v1/users/me/messages/', 403, { reason: 'rateLimitExceeded', headers: { 'retry-after': '1' } });
    await syncAndWait(id);
    expect(await connection(id)).toMatchObject({ status: 'active', last_error: null });
    expect(bySubject(await read(), 'Frequency hopping')).toHaveLength(1);
  });

  it('a Gmail API not enabled in the Cloud project (403 accessNotConfigured, SERVICE_DISABLED) names the API to enable and asks for no new sign-in', async () => {
    google.state.disabledApis.add('gmail');
    await fetch(`${consoleService.address}/api/connections/${id}/sync`, { method: 'POST' });
    // The sync is retried, then the connection shows the error: the fix, never "needs sign-in".
    const failed = await waitFor(async () => {
      const row = await connection(id);
      return row?.status === 'error' || row?.status === 'needs_sign_in' ? row : undefined;
    }, 15_000, 'the failed mail sync');
    expect(failed.status).toBe('error');
    expect(failed.last_error).toContain('enable the Gmail API for this Google Cloud project');
    expect(failed.last_error).not.toMatch(/sign in again/);
    // Enabling the API is all it takes: the next sync works with the same sign-in.
    google.state.disabledApis.delete('gmail');
    await syncAndWait(id);
    expect(await connection(id)).toMatchObject({ status: 'active', last_error: null });
  });

  it('an expired access token is refreshed with the same refresh token, which Google does not rotate', async () => {
    const refreshes = google.state.refreshes;
    google.expireAccessTokens();
    await syncAndWait(id);
    expect(await connection(id)).toMatchObject({ status: 'active', last_error: null });
    expect(google.state.refreshes).toBe(refreshes + 1);
    expect(new Set(google.state.presentedRefreshTokens).size).toBe(1);
  });
});
