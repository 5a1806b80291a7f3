import { beforeAll, describe, expect, it } from 'vitest';
import { upsertRecords } from '../cache/index.ts';
import { findObject, type ObjectDef } from '../sectors/index.ts';
import { insertTestConnection, useTestEnvironment } from '@pcg/testkit/testing';
import { createQueryEngine, type QueryEngine } from './query-engine.ts';

// Issue 20, the smaller items: the sender's address and name as fields, contains that ignores accents,
// and a field that tells a night or a workout reported by two sources.
const testEnv = useTestEnvironment();
let engine: QueryEngine;
const mail = findObject('mail.message') as ObjectDef;
const contact = findObject('contacts.contact') as ObjectDef;
const sleep = findObject('health.sleep_session') as ObjectDef;
let wearable: string;
let phone: string;

beforeAll(async () => {
  engine = createQueryEngine({ db: testEnv.db, direct: testEnv.direct });
  const inbox = await insertTestConnection(testEnv.db, { sector: 'mail', provider: 'gmail' });
  await upsertRecords(testEnv.db, {
    object: 'mail.message',
    connectionId: inbox,
    source: 'gmail',
    records: [
      { source_id: 'a', from: 'Ava Müller <Ava.Muller@example.com>' },
      { source_id: 'b', from: 'A. Muller <ava.muller@example.com>' },
      { source_id: 'c', from: 'ava.muller@example.com' },
      { source_id: 'd', from: '"Chen, Maya" <maya@example.com>' },
      // A record cannot set the derived fields.
      { source_id: 'e', from: 'Ben <ben@example.com>', from_address: 'forged@example.com' },
    ],
  });
  const book = await insertTestConnection(testEnv.db, { sector: 'contacts', provider: 'google' });
  await upsertRecords(testEnv.db, {
    object: 'contacts.contact',
    connectionId: book,
    source: 'google',
    records: [
      { source_id: '1', display_name: 'Jonas Müller' },
      { source_id: '2', display_name: 'Chloé Dubois' },
      { source_id: '3', display_name: 'Zoë García' },
    ],
  });
  wearable = await insertTestConnection(testEnv.db, { sector: 'health', provider: 'whoop' });
  phone = await insertTestConnection(testEnv.db, { sector: 'health', provider: 'health-auto-export' });
  const night = (day: number, startHour: number, endHour: number) => ({ start_at: `2026-03-${day}T${String(startHour).padStart(2, '0')}:00:00Z`, end_at: `2026-03-${day + 1}T${String(endHour).padStart(2, '0')}:00:00Z`, asleep_s: 25_000 });
  await upsertRecords(testEnv.db, { object: 'health.sleep_session', connectionId: wearable, source: 'whoop', records: [{ source_id: 'w10', ...night(10, 22, 6) }, { source_id: 'w11', ...night(11, 22, 6) }] });
  await upsertRecords(testEnv.db, { object: 'health.sleep_session', connectionId: phone, source: 'health-auto-export', records: [{ source_id: 'p10', ...night(10, 23, 7) }, { source_id: 'p12', ...night(12, 22, 6) }] });
});

describe('the sender as address and name', () => {
  it('derives from_address (lower-cased) and from_name from from, whatever form it takes', async () => {
    const { rows } = await engine.query(mail, { object: 'mail.message', select: ['source_id', 'from_address', 'from_name'], order_by: [{ field: 'source_id', direction: 'asc' }] });
    expect(rows.map(({ source_id, from_address, from_name }) => ({ source_id, from_address, from_name }))).toEqual([
      { source_id: 'a', from_address: 'ava.muller@example.com', from_name: 'Ava Müller' },
      { source_id: 'b', from_address: 'ava.muller@example.com', from_name: 'A. Muller' },
      { source_id: 'c', from_address: 'ava.muller@example.com', from_name: null },
      { source_id: 'd', from_address: 'maya@example.com', from_name: 'Chen, Maya' },
      { source_id: 'e', from_address: 'ben@example.com', from_name: 'Ben' },
    ]);
  });

  it('groups senders by address: the one who wrote most', async () => {
    const { rows } = await engine.query(mail, { object: 'mail.message', aggregate: { group_by: ['from_address'], metrics: [{ fn: 'count' }] }, order_by: [{ field: 'count', direction: 'desc' }], limit: 1 });
    expect(rows).toEqual([{ from_address: 'ava.muller@example.com', count: 3 }]);
  });
});

describe('contains and starts_with ignore accents and case', () => {
  const names = async (op: string, value: string) =>
    (await engine.query(contact, { object: 'contacts.contact', where: [{ field: 'display_name', op, value }], select: ['display_name'] })).rows.map((row) => row.display_name).sort();

  it('finds Müller by "muller" and "MÜLLER", Chloé by "chloe", García by "garc"', async () => {
    expect(await names('contains', 'muller')).toEqual(['Jonas Müller']);
    expect(await names('contains', 'MÜLLER')).toEqual(['Jonas Müller']);
    expect(await names('starts_with', 'chloe')).toEqual(['Chloé Dubois']);
    expect(await names('contains', 'garc')).toEqual(['Zoë García']);
    expect(await names('contains', 'zoe gar')).toEqual(['Zoë García']);
  });

  it('still treats % and _ as text', async () => {
    expect(await names('contains', '%')).toEqual([]);
    expect(await names('contains', '_')).toEqual([]);
  });
});

describe('a night reported by two sources', () => {
  it('names, on the later source\'s row, the row that counts instead; the first source\'s rows count', async () => {
    const { rows } = await engine.query(sleep, { object: 'health.sleep_session', select: ['source_id', 'duplicate_of'], order_by: [{ field: 'start_at', direction: 'asc' }] });
    const id = (sourceId: string) => rows.find((row) => row.source_id === sourceId)?.id;
    expect(rows.map(({ source_id, duplicate_of }) => [source_id, duplicate_of])).toEqual([
      ['w10', null],
      ['p10', id('w10')],
      ['w11', null],
      ['p12', null],
    ]);
  });

  it('counts each night once with duplicate_of is_null true', async () => {
    const { rows } = await engine.query(sleep, { object: 'health.sleep_session', where: [{ field: 'duplicate_of', op: 'is_null', value: true }], aggregate: { metrics: [{ fn: 'count' }, { fn: 'sum', field: 'asleep_s' }] } });
    expect(rows).toEqual([{ count: 3, sum_asleep_s: 75_000 }]);
  });

  it('is part of the record get_record returns', async () => {
    const { rows } = await engine.query(sleep, { object: 'health.sleep_session', where: [{ field: 'source_id', op: 'eq', value: 'p10' }] });
    const record = await engine.getRecord(sleep, String(rows[0]?.id));
    expect(record?.duplicate_of).toEqual(expect.any(String));
    expect(record?.connection_id).toBe(phone);
    expect(wearable).not.toBe(phone);
  });
});
