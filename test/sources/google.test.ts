import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@pcg/shared/config';
import { createConnectionQueries } from '@pcg/shared/connections';
import { GOOGLE_CALENDAR_SCOPE, GOOGLE_CONTACTS_SCOPE } from '@pcg/shared/providers';
import { startGoogleDouble, type GoogleDouble } from '@pcg/testkit/doubles';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { startConsole, type RunningConsole } from '../../services/console/src/service.ts';
import { syncWorkerConfigSchema } from '../../services/sync-worker/src/config.ts';
import { startSyncWorker, type RunningSyncWorker } from '../../services/sync-worker/src/service.ts';
import { signInThroughConsole, syncThroughConsole } from '../support/console-sign-in.ts';

// Google Calendar and Contacts end to end (issue 17): one Google sign-in through the Console, the
// sync-worker's exchange and syncs against the local Google, and what the operator's reads return.
const testEnv = useTestEnvironment();
const key = randomBytes(32);
let google: GoogleDouble;
let consoleService: RunningConsole;
let worker: RunningSyncWorker;

type Row = Record<string, unknown>;
async function read(object: string, where: unknown[] = []): Promise<Row[]> {
  const answer = await fetch(`${consoleService.address}/api/data/${object.split('.')[0]}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ object, where, limit: 200 }),
  });
  expect(answer.status).toBe(200);
  return ((await answer.json()) as { rows: Row[] }).rows;
}

async function signIn(denied: string[]) {
  google.state.deniedScopes = denied;
  const signedIn = await signInThroughConsole(consoleService.address, 'google');
  expect(signedIn.startStatus).toBe(302);
  return signedIn;
}

const connection = async (id: string) => createConnectionQueries(testEnv.db).get(id);
const syncAndWait = (id: string) => syncThroughConsole(testEnv.db, consoleService.address, id);
const byTitle = (rows: Row[], title: string) => rows.filter((row) => row.title === title);

beforeAll(async () => {
  google = await startGoogleDouble();
  const env = testEnv.env({ CREDENTIALS_KEY: key.toString('base64'), REST_PORT: '0', SOURCE_TIMEOUT_MS: '2000', SYNC_BACKOFF_MS: '100', GOOGLE_BASE_URL: google.url });
  worker = await startSyncWorker(loadConfig(syncWorkerConfigSchema, env), createCapturingLogger('sync-worker').log);
  consoleService = await startConsole(loadConfig(consoleConfigSchema, env), createCapturingLogger('console').log, { audit: { record: () => undefined } });
  const saved = await fetch(`${consoleService.address}/api/connect/google/app`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(google.client) });
  expect(saved.status).toBe(204);
});
afterAll(async () => {
  await consoleService?.close();
  await worker?.close();
  await google?.close();
});

describe('Google Calendar and Contacts from one sign-in', () => {
  let calendarId = '';
  let contactsId = '';

  it('asks for the two read scopes and openid email, and a consent granting only calendar gives one calendar connection', async () => {
    const answer = await signIn([GOOGLE_CONTACTS_SCOPE]);
    expect(answer.authorize.searchParams.get('scope')?.split(' ').sort()).toEqual([GOOGLE_CALENDAR_SCOPE, GOOGLE_CONTACTS_SCOPE, 'email', 'openid'].sort());
    expect(answer.authorize.searchParams.get('access_type')).toBe('offline');
    expect(answer.status).toBe(200);
    const connections = answer.body.connections as Array<{ id: string; sector: string }>;
    expect(connections.map((row) => row.sector)).toEqual(['calendar']);
    calendarId = connections[0]?.id ?? '';
    await waitFor(async () => ((await connection(calendarId))?.last_synced_at ? true : undefined), 15_000, 'the first calendar sync');
  });

  it('the same account granting both adds the contacts connection, synced in full', async () => {
    const answer = await signIn([]);
    expect(answer.status).toBe(200);
    const rows = await createConnectionQueries(testEnv.db).list();
    expect(rows.map((row) => row.sector).sort()).toEqual(['calendar', 'contacts']);
    contactsId = rows.find((row) => row.sector === 'contacts')?.id ?? '';
    await waitFor(async () => ((await connection(contactsId))?.last_synced_at ? true : undefined), 15_000, 'the first contacts sync');
    const contacts = await read('contacts.contact');
    expect(contacts.map((row) => row.display_name).sort()).toEqual(['Ada Lovelace', 'Alan Turing', 'Grace Hopper']);
    expect(contacts.find((row) => row.display_name === 'Ada Lovelace')).toMatchObject({ organization: 'Analytical Engines', title: 'Programmer', birthday: '1815-12-10', emails: [{ type: 'work', value: 'ada@example.com' }], phones: [{ type: 'mobile', value: '+442079460000' }] });
    expect(contacts.find((row) => row.display_name === 'Grace Hopper')?.birthday).toBe('1604-12-09');
  });

  it('keeps one row per occurrence of the selected calendars inside the window, all-day events as local dates', async () => {
    const events = await read('calendar.event');
    expect(byTitle(events, 'Weekly sync')).toHaveLength(6);
    expect(byTitle(events, 'Long ago')).toHaveLength(0); // outside the sync window
    expect(byTitle(events, 'Hidden holiday')).toHaveLength(0); // an unticked calendar
    const offsite = google.calendar.events.get('offsite');
    const [row] = byTitle(events, 'Team offsite');
    expect(row).toMatchObject({ all_day: true, start_at: null, end_at: null });
    expect(row?.start_date).toBe(offsite && 'date' in offsite.start ? offsite.start.date : 'missing');
    expect(row?.end_date).toBe(offsite && 'date' in offsite.end ? offsite.end.date : 'missing');
    expect(byTitle(events, 'Dentist')[0]).toMatchObject({ all_day: false, timezone: 'Europe/Zurich', calendar: 'Demo Person', start_date: null });
    expect(byTitle(events, 'Grandma birthday')[0]).toMatchObject({ calendar: 'Family', all_day: true });
  });

  it('syncs incrementally with the sync token: a moved and a cancelled occurrence of the weekly meeting, a deleted event, a deleted contact', async () => {
    google.calendar.moveOccurrence('weeklysync', 3, 2 * 3_600_000);
    google.calendar.cancelOccurrence('weeklysync', 4);
    google.calendar.cancel('dentist');
    google.people.remove('people/c3');
    google.people.update('people/c2', { organizations: [{ name: 'US Navy', title: 'Rear Admiral' }] });
    const from = google.state.requests.length;
    await syncAndWait(calendarId);
    await syncAndWait(contactsId);
    const calls = google.state.requests.slice(from);
    expect(calls.filter((call) => call.path.endsWith('/events')).every((call) => call.query.has('syncToken'))).toBe(true);
    expect(calls.filter((call) => call.path === '/v1/people/me/connections').every((call) => call.query.has('syncToken'))).toBe(true);
    const weekly = byTitle(await read('calendar.event'), 'Weekly sync');
    expect(weekly).toHaveLength(5);
    const moved = google.calendar.events.get('weeklysync');
    const original = moved && 'dateTime' in moved.start ? Date.parse(moved.start.dateTime) + 3 * 7 * 86_400_000 : 0;
    const movedRow = weekly.find((row) => row.recurrence_id === new Date(original).toISOString());
    expect(Date.parse(String(movedRow?.start_at)) - original).toBe(2 * 3_600_000);
    expect(weekly.some((row) => row.recurrence_id === new Date(original + 7 * 86_400_000).toISOString())).toBe(false);
    expect(byTitle(await read('calendar.event'), 'Dentist')).toHaveLength(0);
    const contacts = await read('contacts.contact');
    expect(contacts.map((row) => row.display_name).sort()).toEqual(['Ada Lovelace', 'Grace Hopper']);
    expect(contacts.find((row) => row.display_name === 'Grace Hopper')?.organization).toBe('US Navy');
  });

  it('an expired sync token (410, EXPIRED_SYNC_TOKEN) gives one full resync with no duplicate', async () => {
    const eventsBefore = (await read('calendar.event')).length;
    google.calendar.expireSyncTokens();
    google.people.expireSyncTokens();
    const from = google.state.requests.length;
    await syncAndWait(calendarId);
    await syncAndWait(contactsId);
    expect(await read('calendar.event')).toHaveLength(eventsBefore);
    expect(await read('contacts.contact')).toHaveLength(2);
    const people = google.state.requests.slice(from).filter((call) => call.path === '/v1/people/me/connections');
    expect(people.filter((call) => !call.query.has('syncToken') && !call.query.has('pageToken'))).toHaveLength(1);
    expect(await connection(calendarId)).toMatchObject({ status: 'active', last_error: null });
  });

  it('a 403 rateLimitExceeded leaves both connections scheduled and signed in, and a 401 refreshes once with the same refresh token', async () => {
    google.failNext('/calendar/v3/users/me/calendarList', 403, { reason: 'rateLimitExceeded', headers: { 'retry-after': '1' } });
    await syncAndWait(calendarId);
    expect(await connection(calendarId)).toMatchObject({ status: 'active', last_error: null });
    google.expireAccessTokens();
    await syncAndWait(contactsId);
    expect(await connection(contactsId)).toMatchObject({ status: 'active', last_error: null });
    expect(google.state.refreshes).toBeGreaterThanOrEqual(1);
    expect(new Set(google.state.presentedRefreshTokens).size).toBe(1);
  });

  it('lists in full from the start of the window (timeMin), goes on with the sync token alone, and keeps nothing that ended before the window', async () => {
    const DAY = 86_400_000;
    // CALENDAR_PAST_DAYS' default: 90 days before today's UTC midnight.
    const windowStart = Math.floor(Date.now() / DAY) * DAY - 90 * DAY;
    const at = (ms: number) => ({ dateTime: new Date(ms).toISOString().replace('.000Z', 'Z'), timeZone: 'UTC' });
    google.calendar.add({ id: 'beforewindow', calendarId: 'primary-calendar@example.com', summary: 'Before the window', start: at(windowStart - 3 * DAY), end: at(windowStart - 2 * DAY) });
    google.calendar.add({ id: 'acrossedge', calendarId: 'primary-calendar@example.com', summary: 'Across the window start', start: at(windowStart - DAY), end: at(windowStart + 2 * DAY) });
    google.calendar.expireSyncTokens();
    const from = google.state.requests.length;
    await syncAndWait(calendarId);
    const full = google.state.requests.slice(from).filter((call) => call.path.endsWith('/events') && !call.query.has('syncToken'));
    expect(full.length).toBeGreaterThanOrEqual(2); // both selected calendars, and their further pages
    for (const call of full) {
      const timeMin = Date.parse(call.query.get('timeMin') ?? '');
      expect(timeMin).toBeLessThanOrEqual(windowStart);
      expect(timeMin).toBeGreaterThanOrEqual(windowStart - 2 * DAY);
    }
    const events = await read('calendar.event');
    expect(byTitle(events, 'Before the window')).toHaveLength(0);
    expect(byTitle(events, 'Long ago')).toHaveLength(0);
    expect(byTitle(events, 'Across the window start')).toHaveLength(1);

    // Google refuses timeMin beside a sync token (400): the next sync sends the token alone and succeeds.
    const next = google.state.requests.length;
    await syncAndWait(calendarId);
    const incremental = google.state.requests.slice(next).filter((call) => call.path.endsWith('/events'));
    expect(incremental.length).toBeGreaterThan(0);
    expect(incremental.every((call) => call.query.has('syncToken') && !call.query.has('timeMin'))).toBe(true);
    expect(await connection(calendarId)).toMatchObject({ status: 'active', last_error: null });
  });

  it('a Calendar API not enabled in the Cloud project (403 accessNotConfigured, SERVICE_DISABLED) names the API to enable and asks for no new sign-in', async () => {
    google.state.disabledApis.add('calendar');
    await fetch(`${consoleService.address}/api/connections/${calendarId}/sync`, { method: 'POST' });
    const failed = await waitFor(async () => {
      const row = await connection(calendarId);
      return row?.status === 'error' || row?.status === 'needs_sign_in' ? row : undefined;
    }, 15_000, 'the failed calendar sync');
    expect(failed.status).toBe('error');
    expect(failed.last_error).toContain('enable the Google Calendar API for this Google Cloud project');
    expect(failed.last_error).not.toMatch(/sign in again/);
    expect(await connection(contactsId)).toMatchObject({ status: 'active' }); // the grant behind both is fine
    google.state.disabledApis.delete('calendar');
    await syncAndWait(calendarId);
    expect(await connection(calendarId)).toMatchObject({ status: 'active', last_error: null });
  });
});

describe('a recurring weekly meeting with one moved and one cancelled occurrence', () => {
  it('gives one row per remaining occurrence, the moved one at its new time, both from the sync token and from a full listing', async () => {
    const calendarId = (await createConnectionQueries(testEnv.db).list()).find((row) => row.sector === 'calendar')?.id ?? '';
    const HOUR = 3_600_000;
    const WEEK = 7 * 86_400_000;
    const first = Date.parse(`${new Date(Date.now() + 86_400_000).toISOString().slice(0, 10)}T16:00:00Z`);
    const iso = (at: number) => new Date(at).toISOString().replace('.000Z', 'Z');
    google.calendar.add({ id: 'planning', calendarId: 'primary-calendar@example.com', summary: 'Planning', start: { dateTime: iso(first), timeZone: 'Europe/Zurich' }, end: { dateTime: iso(first + HOUR), timeZone: 'Europe/Zurich' }, weekly: 4 });
    const expected = [
      { recurrence_id: new Date(first).toISOString(), start_at: new Date(first).toISOString() },
      { recurrence_id: new Date(first + WEEK).toISOString(), start_at: new Date(first + WEEK - 3 * HOUR).toISOString() },
      { recurrence_id: new Date(first + 3 * WEEK).toISOString(), start_at: new Date(first + 3 * WEEK).toISOString() },
    ];
    const rows = async () =>
      byTitle(await read('calendar.event'), 'Planning')
        .map((row) => ({ recurrence_id: row.recurrence_id, start_at: row.start_at }))
        .sort((a, b) => String(a.recurrence_id).localeCompare(String(b.recurrence_id)));

    await syncAndWait(calendarId);
    expect(await rows()).toHaveLength(4);
    // The sync token brings the moved occurrence and the cancelled one as `status: cancelled`, which removes its row.
    google.calendar.moveOccurrence('planning', 1, -3 * HOUR);
    google.calendar.cancelOccurrence('planning', 2);
    await syncAndWait(calendarId);
    expect(await rows()).toEqual(expected);
    expect(byTitle(await read('calendar.event'), 'Planning').every((row) => row.event_uid === 'planning@google.com' && row.status === 'confirmed')).toBe(true);
    // A full listing leaves the cancelled occurrence out: the same rows, none twice.
    google.calendar.expireSyncTokens();
    await syncAndWait(calendarId);
    expect(await rows()).toEqual(expected);
  });
});
