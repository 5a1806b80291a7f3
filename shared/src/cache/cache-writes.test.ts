import { sql } from 'slonik';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { insertTestConnection, useTestEnvironment } from '@pcg/testkit/testing';
import { deleteRecords, upsertRecords } from './cache-writes.ts';

const testEnv = useTestEnvironment();
let connectionId: string;

const Row = z.object({ id: z.string(), source_id: z.string(), amount: z.string(), posted_on: z.string().nullable(), pending: z.boolean(), description: z.string().nullable() });
const rows = () => testEnv.db.many(sql.type(Row)`SELECT id, source_id, amount, posted_on, pending, description FROM finance_transactions ORDER BY source_id`);

beforeAll(async () => {
  connectionId = await insertTestConnection(testEnv.db, { sector: 'finance', provider: 'plaid' });
});

describe('upsertRecords', () => {
  it('writes a batch in one go, converting numbers to exact decimals', async () => {
    const written = await upsertRecords(testEnv.db, {
      object: 'finance.transaction',
      connectionId,
      source: 'plaid',
      records: [
        { source_id: 't1', amount: -12.5, posted_on: '2026-03-01', pending: false, description: 'Coffee' },
        { source_id: 't2', amount: '1000.00', posted_on: '2026-03-02', pending: true, surprise: 'ignored' },
      ],
    });
    expect(written).toBe(2);
    expect(await rows()).toMatchObject([
      { source_id: 't1', amount: '-12.5', posted_on: '2026-03-01', pending: false, description: 'Coffee' },
      { source_id: 't2', amount: '1000.00', pending: true, description: null },
    ]);
  });

  it('is idempotent: a re-sent record updates in place and keeps its gateway id', async () => {
    const before = await rows();
    await upsertRecords(testEnv.db, {
      object: 'finance.transaction',
      connectionId,
      source: 'plaid',
      records: [{ source_id: 't2', amount: '999.99', posted_on: '2026-03-02', pending: false }],
    });
    const after = await rows();
    expect(after).toHaveLength(2);
    expect(after.find((row) => row.source_id === 't2')).toMatchObject({ id: before[1]?.id, amount: '999.99', pending: false });
  });

  it('keeps the last of two records with one source_id in a batch', async () => {
    await upsertRecords(testEnv.db, {
      object: 'finance.transaction',
      connectionId,
      source: 'plaid',
      records: [
        { source_id: 't3', amount: 1, pending: false },
        { source_id: 't3', amount: 2, pending: false },
      ],
    });
    expect((await rows()).find((row) => row.source_id === 't3')?.amount).toBe('2');
  });

  it('refuses a bad record naming its index and field, and writes nothing of the batch', async () => {
    const count = (await rows()).length;
    await expect(
      upsertRecords(testEnv.db, {
        object: 'finance.transaction',
        connectionId,
        source: 'plaid',
        records: [{ source_id: 'ok', amount: 1, pending: false }, { source_id: 'bad', amount: '12,50', pending: false }],
      }),
    ).rejects.toThrow("finance.transaction record 1: 'amount'");
    expect(await rows()).toHaveLength(count);
  });

  it('cannot set the managed columns', async () => {
    await upsertRecords(testEnv.db, {
      object: 'finance.transaction',
      connectionId,
      source: 'plaid',
      records: [{ source_id: 't4', amount: 1, pending: false, id: 'chosen', connection_id: '00000000-0000-0000-0000-000000000000' }],
    });
    const row = await testEnv.db.one(sql.type(z.object({ id: z.string(), connection_id: z.string() }))`
      SELECT id, connection_id::text FROM finance_transactions WHERE source_id = 't4'`);
    expect(row.id).not.toBe('chosen');
    expect(row.connection_id).toBe(connectionId);
  });

  it('refuses an unknown object', async () => {
    await expect(upsertRecords(testEnv.db, { object: 'finance.secret', connectionId, source: 'x', records: [] })).rejects.toThrow("unknown object 'finance.secret'");
  });

  it('deletes records by source id', async () => {
    expect(await deleteRecords(testEnv.db, { object: 'finance.transaction', connectionId, sourceIds: ['t3', 't4', 'missing'] })).toBe(2);
    expect((await rows()).map((row) => row.source_id)).toEqual(['t1', 't2']);
  });
});
