import { sql } from 'slonik';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { upsertRecords } from '../cache/index.ts';
import { findObject, type ObjectDef } from '../sectors/index.ts';
import { insertTestConnection, useTestEnvironment } from '@pcg/testkit/testing';
import { createQueryEngine, type QueryEngine } from './query-engine.ts';
import { CURSOR_SHAPE_MISMATCH, INVALID_CURSOR } from './query-cursor.ts';
import { QueryError } from './query-errors.ts';
import { EXPECTED_DATE, EXPECTED_INSTANT, EXPECTED_TEXT } from './query-plan.ts';

const testEnv = useTestEnvironment();
let engine: QueryEngine;
const tx = findObject('finance.transaction') as ObjectDef;
const mail = findObject('mail.message') as ObjectDef;
const TOTAL = 137;

function transaction(i: number) {
  return {
    source_id: `t${String(i).padStart(3, '0')}`,
    // Every 10th has no posted date (pending); amounts repeat so ordering needs its tiebreak.
    posted_on: i % 10 === 0 ? null : `2026-0${1 + (i % 3)}-${String(1 + (i % 28)).padStart(2, '0')}`,
    amount: i % 4 === 0 ? `${i}.00` : `-${(i % 7) + 1}.25`,
    currency: 'EUR',
    description: i === 5 ? 'Café "Zur Börse" 100%_off' : `purchase ${i}`,
    merchant_name: i % 5 === 0 ? null : `Shop ${i % 6}`,
    // The source's word; these are words of the category set, so category reads the same (design 8.3).
    provider_category: ['groceries', 'transport', 'dining'][i % 3],
    category: ['groceries', 'transport', 'dining'][i % 3],
    pending: i % 10 === 0,
  };
}

beforeAll(async () => {
  engine = createQueryEngine({ db: testEnv.db, direct: testEnv.direct });
  const finance = await insertTestConnection(testEnv.db, { sector: 'finance', provider: 'plaid' });
  await upsertRecords(testEnv.db, { object: 'finance.transaction', connectionId: finance, source: 'plaid', records: Array.from({ length: TOTAL }, (_, i) => transaction(i)) });
  const mailbox = await insertTestConnection(testEnv.db, { sector: 'mail', provider: 'gmail' });
  await upsertRecords(testEnv.db, {
    object: 'mail.message',
    connectionId: mailbox,
    source: 'gmail',
    records: [
      { source_id: 'm1', subject: 'Invoice', from: 'Ann <ann@example.com>', to: ['me@example.com'], labels: ['INBOX', 'finance'], received_at: '2026-03-01T10:00:00Z', is_read: false },
      { source_id: 'm2', subject: 'Lunch?', from: 'Bob <bob@example.com>', to: ['me@example.com'], labels: ['INBOX'], received_at: '2026-03-02T10:00:00Z', is_read: true },
    ],
  });
});

const q = (input: Record<string, unknown>, object = tx) => engine.query(object, { object: object.name, ...input });
// select keeps 200 rows inside the page's size budget.
const ids = async (input: Record<string, unknown>) => (await q({ ...input, select: ['source_id'], limit: 200 })).rows.map((row) => row.source_id as string).sort();
const expectIds = (predicate: (i: number) => boolean) =>
  Array.from({ length: TOTAL }, (_, i) => i).filter(predicate).map((i) => transaction(i).source_id).sort();

describe('query operators', () => {
  it.each([
    ['eq', { field: 'category', op: 'eq', value: 'dining' }, (i: number) => i % 3 === 2],
    ['ne (includes missing values)', { field: 'merchant_name', op: 'ne', value: 'Shop 1' }, (i: number) => i % 5 === 0 || i % 6 !== 1],
    ['lt on a decimal', { field: 'amount', op: 'lt', value: '0' }, (i: number) => i % 4 !== 0],
    ['lte', { field: 'amount', op: 'lte', value: -7.25 }, (i: number) => i % 4 !== 0 && (i % 7) + 1 >= 7],
    ['gt', { field: 'amount', op: 'gt', value: '100' }, (i: number) => i % 4 === 0 && i > 100],
    ['gte on a date', { field: 'posted_on', op: 'gte', value: '2026-03-01' }, (i: number) => i % 10 !== 0 && i % 3 === 2],
    ['between on a date (inclusive)', { field: 'posted_on', op: 'between', value: ['2026-01-01', '2026-01-05'] }, (i: number) => i % 10 !== 0 && i % 3 === 0 && 1 + (i % 28) <= 5],
    ['in', { field: 'category', op: 'in', value: ['groceries', 'transport'] }, (i: number) => i % 3 !== 2],
    ['not_in (includes missing values)', { field: 'merchant_name', op: 'not_in', value: ['Shop 1', 'Shop 2'] }, (i: number) => i % 5 === 0 || ![1, 2].includes(i % 6)],
    ['contains (case-insensitive, literal % and _)', { field: 'description', op: 'contains', value: '100%_OFF' }, (i: number) => i === 5],
    ['contains unicode and quotes', { field: 'description', op: 'contains', value: 'café "zur' }, (i: number) => i === 5],
    ['starts_with', { field: 'description', op: 'starts_with', value: 'PURCHASE 1' }, (i: number) => i !== 5 && String(i).startsWith('1')],
    ['is_null true', { field: 'posted_on', op: 'is_null', value: true }, (i: number) => i % 10 === 0],
    ['is_null false', { field: 'posted_on', op: 'is_null', value: false }, (i: number) => i % 10 !== 0],
    ['eq on a boolean', { field: 'pending', op: 'eq', value: true }, (i: number) => i % 10 === 0],
  ])('%s', async (_label, filter, predicate) => {
    expect(await ids({ where: [filter] })).toEqual(expectIds(predicate));
  });

  it('combines filters with AND', async () => {
    const found = await ids({ where: [{ field: 'category', op: 'eq', value: 'dining' }, { field: 'amount', op: 'lt', value: 0 }] });
    expect(found).toEqual(expectIds((i) => i % 3 === 2 && i % 4 !== 0));
  });

  it('matches one whole element of a list with contains', async () => {
    const rows = (await q({ where: [{ field: 'labels', op: 'contains', value: 'finance' }] }, mail)).rows;
    expect(rows.map((row) => row.subject)).toEqual(['Invoice']);
    expect((await q({ where: [{ field: 'labels', op: 'contains', value: 'fin' }] }, mail)).rows).toEqual([]);
  });

  it.each([
    ['a leap day', { field: 'posted_on', op: 'eq', value: '2024-02-29' }],
    ['the first and last dates Postgres is asked to hold', { field: 'posted_on', op: 'between', value: ['0001-01-01', '9999-12-31'] }],
    ['instants at both ends, with offsets', { field: 'synced_at', op: 'between', value: ['0001-01-01T00:00:00+01:00', '9999-12-31T23:59:59.999999-15:00'] }],
    ['an instant without seconds or offset (UTC)', { field: 'synced_at', op: 'gt', value: '2000-01-01T00:00' }],
  ])('accepts %s', async (_label, filter) => {
    await expect(q({ where: [filter], limit: 1 })).resolves.toMatchObject({ object: 'finance.transaction' });
  });

  it('filters instants given as ISO strings', async () => {
    const rows = (await q({ where: [{ field: 'received_at', op: 'gt', value: '2026-03-01T12:00:00+00:00' }] }, mail)).rows;
    expect(rows.map((row) => row.subject)).toEqual(['Lunch?']);
  });
});

describe('query results and paging', () => {
  it('serves the wire shapes: decimal strings, dates, ISO instants, id always present', async () => {
    const result = await q({ select: ['amount', 'posted_on', 'synced_at'], where: [{ field: 'source_id', op: 'eq', value: 't001' }] });
    expect(result).toMatchObject({ object: 'finance.transaction', row_count: 1, has_more: false });
    expect(result.next_cursor).toBeUndefined();
    const [row] = result.rows;
    expect(Object.keys(row ?? {})).toEqual(['id', 'amount', 'posted_on', 'synced_at']);
    expect(row).toMatchObject({ amount: '-2.25', posted_on: '2026-02-02' });
    expect(row?.synced_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('serves each select list and order its own columns, past the number of select lists kept built', async () => {
    const names = ['amount', 'posted_on', 'currency', 'description', 'merchant_name', 'category', 'pending', 'source_id', 'synced_at'];
    const lists = names.flatMap((first, i) => names.slice(i + 1).flatMap((second) => [[first, second], [second, first]]));
    expect(lists.length).toBeGreaterThan(64);
    for (const [index, select] of [...lists, ...lists.slice(0, 3)].entries()) {
      const order_by = [{ field: select[index % 2] as string, direction: index % 3 === 0 ? 'desc' : 'asc' }];
      const page = await q({ select, order_by, limit: 3 });
      expect(Object.keys(page.rows[0] ?? {})).toEqual(['id', ...select]);
      // The cursor comes from the order's own columns: the next page continues this order.
      const next = await q({ select, order_by, limit: 3, cursor: page.next_cursor });
      const both = await q({ select, order_by, limit: 6 });
      expect([...page.rows, ...next.rows]).toEqual(both.rows);
    }
  });

  it('caps limit at 200 and defaults to 50', async () => {
    expect((await q({})).row_count).toBe(50);
    expect((await q({ select: ['source_id'], limit: 5000 })).row_count).toBe(TOTAL);
  });

  it('says so when it lowers a limit above 200, and only then (issue 34)', async () => {
    const lowered = await q({ select: ['source_id'], limit: 1000 });
    expect(lowered).toMatchObject({
      limit_lowered_to: 200,
      limit_notice: 'limit 1000 is above the maximum of 200, so it was lowered to 200; has_more: true and next_cursor give the rest.',
    });
    const atMax = await q({ select: ['source_id'], limit: 200 });
    expect(atMax).not.toHaveProperty('limit_lowered_to');
    expect(atMax).not.toHaveProperty('limit_notice');
    expect(await q({ limit: 1000, aggregate: { metrics: [{ fn: 'count' }] } })).toMatchObject({ limit_lowered_to: 200 });
  });

  it.each([
    ['the default order (nullable date desc)', undefined],
    ['amount asc then merchant desc (mixed, nullable, repeating)', [{ field: 'amount', direction: 'asc' }, { field: 'merchant_name', direction: 'desc' }]],
    ['non-nullable fields only', [{ field: 'pending', direction: 'desc' }, { field: 'source_id', direction: 'desc' }]],
  ])('pages to the end with no gap and no repeat: %s', async (_label, order_by) => {
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await q({ order_by, limit: 11, cursor });
      seen.push(...page.rows.map((row) => row.source_id as string));
      expect(page.has_more).toBe(page.next_cursor !== undefined);
      cursor = page.next_cursor;
      pages += 1;
    } while (cursor);
    expect(pages).toBe(Math.ceil(TOTAL / 11));
    expect(new Set(seen).size).toBe(TOTAL);
    const all = (await q({ order_by, select: ['source_id'], limit: 200 })).rows.map((row) => row.source_id);
    expect(seen).toEqual(all);
  });

  it('sorts missing values last in both directions', async () => {
    const asc = (await q({ order_by: [{ field: 'posted_on', direction: 'asc' }], select: ['posted_on'], limit: 200 })).rows;
    const desc = (await q({ order_by: [{ field: 'posted_on', direction: 'desc' }], select: ['posted_on'], limit: 200 })).rows;
    expect(asc.at(-1)?.posted_on).toBeNull();
    expect(desc.at(-1)?.posted_on).toBeNull();
    expect(asc[0]?.posted_on).not.toBeNull();
  });

  it('refuses a cursor changed by one character, and a cursor from another query', async () => {
    const first = await q({ limit: 10 });
    const cursor = first.next_cursor as string;
    const flipped = `${cursor.slice(0, 5)}${cursor[5] === 'A' ? 'B' : 'A'}${cursor.slice(6)}`;
    await expect(q({ limit: 10, cursor: flipped })).rejects.toThrow(INVALID_CURSOR);
    await expect(q({ limit: 10, cursor: 'garbage' })).rejects.toThrow(INVALID_CURSOR);
    await expect(q({ limit: 10, cursor, where: [{ field: 'pending', op: 'eq', value: false }] })).rejects.toThrow(CURSOR_SHAPE_MISMATCH);
    // The page size may change between pages.
    expect((await q({ limit: 20, cursor })).row_count).toBe(20);
  });
});

describe('aggregate', () => {
  it('groups, counts, sums exact decimals and averages', async () => {
    const result = await q({
      where: [{ field: 'amount', op: 'lt', value: 0 }],
      aggregate: { group_by: ['category'], metrics: [{ fn: 'count' }, { fn: 'sum', field: 'amount' }, { fn: 'min', field: 'posted_on' }] },
    });
    const spent = Array.from({ length: TOTAL }, (_, i) => i).filter((i) => i % 4 !== 0);
    const expected = ['dining', 'groceries', 'transport'].map((category) => {
      const members = spent.filter((i) => transaction(i).category === category);
      const cents = members.reduce((total, i) => total - ((i % 7) + 1) * 100 - 25, 0);
      return { category, count: members.length, sum_amount: (cents / 100).toFixed(2) };
    });
    expect(result.rows.map(({ category, count, sum_amount }) => ({ category, count, sum_amount }))).toEqual(expected);
    expect(result.has_more).toBe(false);
  });

  it('gives one total row without group_by', async () => {
    const result = await q({ aggregate: { metrics: [{ fn: 'count' }, { fn: 'max', field: 'amount' }] } });
    expect(result.rows).toEqual([{ count: TOTAL, max_amount: '136.00' }]);
  });

  it('caps the number of groups and says there are more', async () => {
    const result = await q({ limit: 3, aggregate: { group_by: ['source_id'], metrics: [{ fn: 'count' }] } });
    expect(result).toMatchObject({ row_count: 3, has_more: true });
  });

  it.each([
    [{ aggregate: { metrics: [{ fn: 'sum', field: 'description' }] } }, "field 'description' cannot be used here; sum-able fields: amount"],
    [{ aggregate: { metrics: [{ fn: 'avg' }] } }, 'avg needs a field'],
    [{ aggregate: { metrics: [{ fn: 'count' }] }, cursor: 'x' }, 'not a cursor this gateway issued'],
    [{ aggregate: { group_by: ['category'], metrics: [{ fn: 'count' }] }, order_by: [{ field: 'amount', direction: 'asc' }] }, "order_by.0: 'amount' is not an output of this aggregate; order by one of: category, count"],
    [{ aggregate: { group_by: [{ field: 'amount', bucket: 'week' }], metrics: [{ fn: 'count' }] } }, "aggregate.group_by.0.field: field 'amount' cannot be used here; date or timestamp fields: synced_at, posted_on, authorized_on, date"],
  ])('refuses misuse: %j', async (input, message) => {
    await expect(q(input)).rejects.toThrow(message);
  });
});

describe('hostile and malformed input: a clear QueryError, never a SQL error', () => {
  it.each([
    ['an injected field name', { where: [{ field: 'amount; drop table x', op: 'eq', value: 1 }] }, "unknown field 'amount; drop table x' on finance.transaction; filterable fields: id, connection_id"],
    ['a quoted identifier', { order_by: [{ field: '"amount"', direction: 'asc' }] }, `unknown field '"amount"'`],
    ['an injected value', { where: [{ field: 'description', op: 'eq', value: "x'; drop table finance_transactions; --" }] }, null],
    ['a wrong operator for the type', { where: [{ field: 'pending', op: 'gt', value: true }] }, "op 'gt' does not apply to pending (boolean); valid ops: eq, ne, is_null"],
    ['an unknown operator', { where: [{ field: 'amount', op: 'like', value: 1 }] }, 'where.0.op'],
    ['a nested array where a scalar belongs', { where: [{ field: 'amount', op: 'eq', value: [[1]] }] }, 'where.0.value'],
    ['a list for a single-value op', { where: [{ field: 'amount', op: 'eq', value: [1, 2] }] }, 'eq takes one value, not a list'],
    ['a 100 KB string', { where: [{ field: 'description', op: 'contains', value: 'x'.repeat(100_000) }] }, 'at most 1000 characters'],
    ['a NUL character', { where: [{ field: 'description', op: 'eq', value: 'a\u0000b' }] }, 'without NUL'],
    ['a malformed decimal', { where: [{ field: 'amount', op: 'lt', value: '12,50' }] }, 'amount is decimal; expected a decimal number'],
    ['a malformed date', { where: [{ field: 'posted_on', op: 'eq', value: '2026-13-45' }] }, `where.0.value: posted_on is date; expected ${EXPECTED_DATE}`],
    // Dates and instants JavaScript accepts and Postgres refuses (issue 12 item 2).
    ['February 30th', { where: [{ field: 'posted_on', op: 'eq', value: '2026-02-30' }] }, `where.0.value: posted_on is date; expected ${EXPECTED_DATE}`],
    ['April 31st', { where: [{ field: 'posted_on', op: 'gte', value: '2026-04-31' }] }, `where.0.value: posted_on is date; expected ${EXPECTED_DATE}`],
    ['year 0000', { where: [{ field: 'posted_on', op: 'lt', value: '0000-01-01' }] }, `where.0.value: posted_on is date; expected ${EXPECTED_DATE}`],
    ['a bad date inside between', { where: [{ field: 'posted_on', op: 'between', value: ['2026-01-01', '2026-02-29'] }] }, 'where.0.value.1: posted_on is date'],
    ['a bad date inside in', { where: [{ field: 'posted_on', op: 'in', value: ['2026-01-01', '2026-06-31'] }] }, 'where.0.value.1: posted_on is date'],
    ['an instant in year 10000', { where: [{ field: 'synced_at', op: 'gt', value: '10000-01-01' }] }, `where.0.value: synced_at is timestamp; expected ${EXPECTED_INSTANT}`],
    ['the last instant JavaScript holds', { where: [{ field: 'synced_at', op: 'lt', value: '275760-09-13' }] }, 'where.0.value: synced_at is timestamp'],
    ['a negative year', { where: [{ field: 'synced_at', op: 'gt', value: '-000001-01-01T00:00:00Z' }] }, 'where.0.value: synced_at is timestamp'],
    ['a six-digit year', { where: [{ field: 'synced_at', op: 'gt', value: '+010000-01-01T00:00:00Z' }] }, 'where.0.value: synced_at is timestamp'],
    ['an instant on February 30th', { where: [{ field: 'synced_at', op: 'gt', value: '2026-02-30T10:00:00Z' }] }, 'where.0.value: synced_at is timestamp'],
    ['an instant in year 0000', { where: [{ field: 'synced_at', op: 'gt', value: '0000-01-01T00:00:00Z' }] }, 'where.0.value: synced_at is timestamp'],
    ['an offset Postgres refuses', { where: [{ field: 'synced_at', op: 'gt', value: '2026-03-01T00:00:00+16:00' }] }, 'where.0.value: synced_at is timestamp'],
    ['free text JavaScript guesses at', { where: [{ field: 'synced_at', op: 'gt', value: '12' }] }, 'where.0.value: synced_at is timestamp'],
    ['an unpaired surrogate', { where: [{ field: 'description', op: 'eq', value: 'a\ud800b' }] }, `where.0.value: description is string; expected ${EXPECTED_TEXT}`],
    ['a NUL inside a list', { where: [{ field: 'category', op: 'in', value: ['dining', 'x\u0000'] }] }, `where.0.value.1: category is string; expected ${EXPECTED_TEXT}`],
    ['an unknown key', { filters: [] }, "unknown key 'filters'"],
    ['a json field filter', { where: [{ field: 'connection_id', op: 'contains', value: 'x' }] }, "op 'contains' does not apply to connection_id (uuid)"],
    ['a negative limit', { limit: -1 }, 'limit'],
    ['a non-sortable order field', { order_by: [{ field: 'nonexistent', direction: 'asc' }] }, 'sortable fields: id'],
    ['an empty in list', { where: [{ field: 'category', op: 'in', value: [] }] }, 'non-empty list'],
  ])('%s', async (_label, input, message) => {
    const attempt = q(input);
    if (message === null) {
      expect((await attempt).rows).toEqual([]);
    } else {
      const error = await attempt.then(() => undefined, (caught: unknown) => caught);
      expect(error).toBeInstanceOf(QueryError);
      expect((error as Error).message).toContain(message);
    }
  });

  it('leaves the table intact after all of it', async () => {
    expect(await testEnv.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM finance_transactions`)).toBe(TOTAL);
  });
});

describe('getRecord', () => {
  it('finds a record by gateway id and returns null for an unknown one', async () => {
    const [row] = (await q({ limit: 1 })).rows;
    const record = await engine.getRecord(tx, row?.id as string);
    expect(record).toMatchObject({ id: row?.id, source: 'plaid' });
    expect(await engine.getRecord(tx, 'no-such-id')).toBeNull();
    expect(await engine.getRecord(tx, "' OR 1=1 --")).toBeNull();
  });

  it.each([['a NUL', 'a\u0000b'], ['an unpaired surrogate', '\udc00']])('refuses an id with %s as a QueryError', async (_label, id) => {
    await expect(engine.getRecord(tx, id)).rejects.toThrow(new QueryError(`id: expected ${EXPECTED_TEXT}`));
  });
});
