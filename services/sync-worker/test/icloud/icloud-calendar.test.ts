import { z } from 'zod';
import { sql } from '@pcg/shared/db';
import { createDavSeeder, startRadicale, type LocalServer, type TestCertificates } from '@pcg/testkit/doubles';
import { useTestEnvironment } from '@pcg/testkit/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionState } from '../helpers.ts';
import { ACCOUNT, icloudCertificates, insertICloudSignIn, setCursor, startICloudRig, type ICloudRig } from './icloud-setup.ts';

const testEnv = useTestEnvironment();
let certs: TestCertificates;
let radicale: LocalServer;
let rig: ICloudRig;
let seed: ReturnType<typeof createDavSeeder>;

const CAL = `/${ACCOUNT.appleId}/home/`;
const Y = new Date().getUTCFullYear() + 1;
const ZURICH = [
  'BEGIN:VTIMEZONE', 'TZID:Europe/Zurich',
  'BEGIN:STANDARD', 'DTSTART:19701025T030000', 'RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU', 'TZOFFSETFROM:+0200', 'TZOFFSETTO:+0100', 'TZNAME:CET', 'END:STANDARD',
  'BEGIN:DAYLIGHT', 'DTSTART:19700329T020000', 'RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU', 'TZOFFSETFROM:+0100', 'TZOFFSETTO:+0200', 'TZNAME:CEST', 'END:DAYLIGHT',
  'END:VTIMEZONE',
];
const calendar = (...lines: string[]) => ['BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//pcg test//EN', ...lines, 'END:VCALENDAR', ''].join('\r\n');
/** Weekly on four Mondays from 5 January at 09:00 Zurich; the 12th is cancelled (EXDATE), the 19th moved to the 20th at 14:00. */
const WEEKLY = calendar(
  ...ZURICH,
  'BEGIN:VEVENT', 'UID:weekly-1', 'SUMMARY:Team sync', `DTSTAMP:${Y}0101T000000Z`,
  `DTSTART;TZID=Europe/Zurich:${Y}0105T090000`, `DTEND;TZID=Europe/Zurich:${Y}0105T093000`, 'RRULE:FREQ=WEEKLY;COUNT=4',
  `EXDATE;TZID=Europe/Zurich:${Y}0112T090000`, 'END:VEVENT',
  'BEGIN:VEVENT', 'UID:weekly-1', 'SUMMARY:Team sync (moved)', `DTSTAMP:${Y}0101T000000Z`, `RECURRENCE-ID;TZID=Europe/Zurich:${Y}0119T090000`,
  `DTSTART;TZID=Europe/Zurich:${Y}0120T140000`, `DTEND;TZID=Europe/Zurich:${Y}0120T143000`, 'END:VEVENT',
);
const ALL_DAY = calendar('BEGIN:VEVENT', 'UID:all-day-1', 'SUMMARY:Holiday', `DTSTAMP:${Y}0101T000000Z`, `DTSTART;VALUE=DATE:${Y}0301`, `DTEND;VALUE=DATE:${Y}0302`, 'END:VEVENT');

const EventRow = z.object({
  source_id: z.string(), title: z.string().nullable(), recurrence_id: z.string().nullable(), all_day: z.boolean(),
  start_at: z.string().nullable(), end_at: z.string().nullable(), start_date: z.string().nullable(), end_date: z.string().nullable(), timezone: z.string().nullable(),
});
function events(connectionId: string) {
  return testEnv.db.any(sql.type(EventRow)`
    SELECT source_id, title, recurrence_id, all_day, to_char(start_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI"Z"') AS start_at,
           to_char(end_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI"Z"') AS end_at, start_date::text AS start_date, end_date::text AS end_date, timezone
    FROM calendar_events WHERE connection_id = ${connectionId}::uuid ORDER BY start_at NULLS LAST, start_date`);
}

describe('iCloud calendar over CalDAV against Radicale', { tags: ['needs-radicale'] }, () => {
  beforeAll(async () => {
    certs = icloudCertificates();
    radicale = await startRadicale(certs, { name: ACCOUNT.appleId, password: ACCOUNT.appPassword });
    rig = await startICloudRig(testEnv, certs, { caldavUrl: `https://caldav.icloud.com:${radicale.port}/` });
    seed = createDavSeeder({ base: `https://caldav.icloud.com:${radicale.port}/`, fetch: rig.transport.fetch, user: ACCOUNT.appleId, password: ACCOUNT.appPassword });
    await seed.calendar(CAL, 'Home');
  });
  afterAll(async () => {
    await rig?.close();
    await radicale?.stop();
    certs?.dispose();
  });

  it('a weekly recurring event with an EXDATE and a moved occurrence gives one row per remaining occurrence', async () => {
    await seed.putEvent(`${CAL}weekly.ics`, WEEKLY);
    const { calendar: id } = await insertICloudSignIn(testEnv.db);
    expect((await rig.syncNow(id)).result).toMatchObject({ outcome: 'synced', mode: 'full' });
    const rows = (await events(id)).filter((row) => row.source_id.includes('weekly.ics'));
    expect(rows.map(({ title, recurrence_id, start_at, end_at, timezone }) => ({ title, recurrence_id, start_at, end_at, timezone }))).toEqual([
      { title: 'Team sync', recurrence_id: `${Y}-01-05T08:00:00.000Z`, start_at: `${Y}-01-05T08:00Z`, end_at: `${Y}-01-05T08:30Z`, timezone: 'Europe/Zurich' },
      { title: 'Team sync (moved)', recurrence_id: `${Y}-01-19T08:00:00.000Z`, start_at: `${Y}-01-20T13:00Z`, end_at: `${Y}-01-20T13:30Z`, timezone: 'Europe/Zurich' },
      { title: 'Team sync', recurrence_id: `${Y}-01-26T08:00:00.000Z`, start_at: `${Y}-01-26T08:00Z`, end_at: `${Y}-01-26T08:30Z`, timezone: 'Europe/Zurich' },
    ]);

    // The series loses its moved occurrence and the rows follow on the next (incremental) sync.
    await seed.putEvent(`${CAL}weekly.ics`, WEEKLY.replace('RRULE:FREQ=WEEKLY;COUNT=4', 'RRULE:FREQ=WEEKLY;COUNT=2'));
    expect((await rig.syncNow(id)).result).toMatchObject({ outcome: 'synced', mode: 'incremental' });
    expect((await events(id)).filter((row) => row.source_id.includes('weekly.ics')).map((row) => row.start_at)).toEqual([`${Y}-01-05T08:00Z`]);

    await seed.remove(`${CAL}weekly.ics`);
    expect((await rig.syncNow(id)).result).toMatchObject({ outcome: 'synced', mode: 'incremental' });
    expect((await events(id)).filter((row) => row.source_id.includes('weekly.ics'))).toEqual([]);
  });

  it.each(['UTC', 'Pacific/Honolulu', 'Pacific/Kiritimati'])('an all-day event reads back as the same local date under TZ=%s', async (zone) => {
    await seed.putEvent(`${CAL}holiday.ics`, ALL_DAY);
    const saved = process.env.TZ;
    process.env.TZ = zone;
    try {
      const { calendar: id } = await insertICloudSignIn(testEnv.db);
      expect((await rig.syncNow(id)).result).toMatchObject({ outcome: 'synced' });
      const holiday = (await events(id)).find((row) => row.title === 'Holiday');
      expect(holiday).toMatchObject({ all_day: true, start_at: null, end_at: null, start_date: `${Y}-03-01`, end_date: `${Y}-03-02` });
    } finally {
      if (saved === undefined) delete process.env.TZ;
      else process.env.TZ = saved;
    }
  });

  it('a sync token the server no longer knows gives one full resync with no duplicate occurrence', async () => {
    await seed.putEvent(`${CAL}weekly.ics`, WEEKLY);
    const { calendar: id } = await insertICloudSignIn(testEnv.db);
    await rig.syncNow(id);
    const before = await events(id);
    const { sync_cursor: cursor } = await connectionState(testEnv.db, id);
    const stale = structuredClone(cursor) as { collections: Record<string, { token: string | null }> };
    for (const state of Object.values(stale.collections)) state.token = 'http://radicale.org/ns/sync/unknown';
    await setCursor(testEnv.db, id, stale);
    const { job, result } = await rig.syncNow(id);
    expect(job.attemptsMade).toBe(1);
    expect(result).toMatchObject({ outcome: 'synced', mode: 'full' });
    expect(await events(id)).toEqual(before);
  });
});
