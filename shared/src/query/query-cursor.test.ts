import { describe, expect, it } from 'vitest';
import { findObject, type ObjectDef } from '../sectors/index.ts';
import { createCursorCodec, CURSOR_SHAPE_MISMATCH, INVALID_CURSOR, queryShape } from './query-cursor.ts';
import { QueryError } from './query-errors.ts';
import { QueryInputSchema } from './query-input.ts';
import { planQuery } from './query-plan.ts';

// A cursor is opaque to the agent, signed by the gateway, and bound to the query that returned it: the object,
// the filters, the order and any grouping; only the page size may change between pages.
const shapeOf = (input: Record<string, unknown>) =>
  queryShape(planQuery(findObject(input.object as string) as ObjectDef, QueryInputSchema.parse(input), { zone: 'Europe/Berlin', now: new Date('2026-03-01T12:00:00Z') }));

const rows = { object: 'finance.transaction', where: [{ field: 'category', op: 'eq', value: 'dining' }], order_by: [{ field: 'date', direction: 'desc' }] };
const grouped = { object: 'finance.transaction', aggregate: { group_by: [{ field: 'date', bucket: 'month' }], metrics: [{ fn: 'count' }] } };

describe('the shape a cursor is bound to', () => {
  it('is the same for the same query whatever the page size', () => {
    expect(shapeOf({ ...rows, limit: 5 })).toBe(shapeOf({ ...rows, limit: 50 }));
  });

  it.each([
    ['another object', { ...rows, object: 'finance.account', where: undefined, order_by: undefined }],
    ['another filter value', { ...rows, where: [{ field: 'category', op: 'eq', value: 'travel' }] }],
    ['another filter operator', { ...rows, where: [{ field: 'category', op: 'ne', value: 'dining' }] }],
    ['another filter field', { ...rows, where: [{ field: 'merchant_name', op: 'eq', value: 'dining' }] }],
    ['no filter', { ...rows, where: undefined }],
    ['another order direction', { ...rows, order_by: [{ field: 'date', direction: 'asc' }] }],
    ['another order field', { ...rows, order_by: [{ field: 'amount', direction: 'desc' }] }],
  ])('changes with %s', (_, other) => {
    expect(shapeOf(other)).not.toBe(shapeOf(rows));
  });

  it('changes with the grouping, its bucket and its metrics', () => {
    const shape = shapeOf(grouped);
    expect(shapeOf({ ...grouped, aggregate: { ...grouped.aggregate, group_by: [{ field: 'date', bucket: 'week' }] } })).not.toBe(shape);
    expect(shapeOf({ ...grouped, aggregate: { ...grouped.aggregate, group_by: ['category'] } })).not.toBe(shapeOf({ ...grouped, aggregate: { ...grouped.aggregate, group_by: ['merchant_name'] } }));
    expect(shapeOf({ ...grouped, aggregate: { ...grouped.aggregate, metrics: [{ fn: 'sum', field: 'amount' }] } })).not.toBe(shape);
    expect(shapeOf(grouped)).not.toBe(shapeOf({ object: 'finance.transaction' }));
  });

  it("changes with the person's time zone when a group is a bucket of days, and only then", () => {
    const inZone = (input: Record<string, unknown>, zone: string) =>
      queryShape(planQuery(findObject('finance.transaction') as ObjectDef, QueryInputSchema.parse(input), { zone, now: new Date('2026-03-01T12:00:00Z') }));
    const mixed = { object: 'finance.transaction', aggregate: { group_by: ['category', { field: 'date', bucket: 'month' }], metrics: [{ fn: 'count' }] } };
    expect(inZone(mixed, 'Europe/Berlin')).not.toBe(inZone(mixed, 'America/New_York'));
    const plain = { object: 'finance.transaction', aggregate: { group_by: ['category'], metrics: [{ fn: 'count' }] } };
    expect(inZone(plain, 'Europe/Berlin')).toBe(inZone(plain, 'America/New_York'));
  });

  it('is written in 22 URL-safe characters', () => {
    expect(shapeOf(rows)).toMatch(/^[A-Za-z0-9_-]{22}$/);
  });
});

describe('a cursor', () => {
  const codec = createCursorCodec(Buffer.alloc(32, 7));
  const shape = shapeOf(rows);
  const values = ['2026-02-28', null, '3f1c'];
  const refusal = (run: () => unknown) => {
    try {
      run();
    } catch (error) {
      return error instanceof QueryError ? error.message : `not a QueryError: ${String(error)}`;
    }
    return 'accepted';
  };

  it('gives back the values it was made with, for the same query', () => {
    expect(codec.decode(shape, codec.encode(shape, values))).toEqual(values);
    expect(codec.decode(shape, codec.encode(shape, []))).toEqual([]);
  });

  it('of another query is refused as such', () => {
    expect(refusal(() => codec.decode(shapeOf({ ...rows, where: undefined }), codec.encode(shape, values)))).toBe(CURSOR_SHAPE_MISMATCH);
  });

  it('changed in any way, or made with another key, is refused as not issued here', () => {
    const cursor = codec.encode(shape, values);
    const [payload = '', signature = ''] = cursor.split('.');
    const forged = Buffer.from(JSON.stringify({ s: shape, v: ['2027-01-01', null, '3f1c'] })).toString('base64url');
    for (const bad of [
      `${forged}.${signature}`,
      `${payload}.${signature.slice(0, -1)}`,
      `${payload}.${signature.slice(0, -2)}${signature.at(-1) === 'A' ? 'B' : 'A'}${signature.at(-1)}`,
      `${payload}.${signature}.x`,
      `${payload}.`,
      `.${signature}`,
      payload,
      '',
      createCursorCodec(Buffer.alloc(32, 8)).encode(shape, values),
    ]) {
      expect(refusal(() => codec.decode(shape, bad))).toBe(INVALID_CURSOR);
    }
  });

  it('signed here but holding something else than order values is refused as not issued here', () => {
    const numbers = [1, 2] as unknown as string[];
    expect(refusal(() => codec.decode(shape, codec.encode(shape, numbers)))).toBe(INVALID_CURSOR);
  });
});
