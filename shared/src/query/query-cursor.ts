import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { QueryError } from './query-errors.ts';
import type { QueryPlan } from './query-plan.ts';

export const INVALID_CURSOR = 'cursor: not a cursor this gateway issued; pass next_cursor from the previous page unchanged';
export const CURSOR_SHAPE_MISMATCH =
  'cursor: it belongs to another query; repeat the same object, where and order_by as the query that returned it';

/** What a cursor is bound to: the object, the filters and the order. The page size may change. */
export function queryShape(plan: QueryPlan): string {
  const shape = {
    o: plan.object.name,
    w: plan.filters.map((filter) => [filter.field.name, filter.op, filter.value]),
    s: plan.order.map((entry) => [entry.field.name, entry.direction]),
  };
  return createHash('sha256').update(JSON.stringify(shape)).digest('base64url').slice(0, 22);
}

export type CursorCodec = {
  encode(shape: string, values: readonly unknown[]): string;
  /** The order values of the last row of the previous page; throws a QueryError when tampered or foreign. */
  decode(shape: string, cursor: string): unknown[];
};

export function createCursorCodec(key: Buffer): CursorCodec {
  const sign = (payload: string) => createHmac('sha256', key).update(payload).digest('base64url');
  return {
    encode(shape, values) {
      const payload = Buffer.from(JSON.stringify({ s: shape, v: values })).toString('base64url');
      return `${payload}.${sign(payload)}`;
    },
    decode(shape, cursor) {
      const [payload, signature, extra] = cursor.split('.');
      if (!payload || !signature || extra !== undefined) throw new QueryError(INVALID_CURSOR);
      const expected = Buffer.from(sign(payload));
      const given = Buffer.from(signature);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new QueryError(INVALID_CURSOR);
      const decoded = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { s: string; v: unknown[] };
      if (decoded.s !== shape) throw new QueryError(CURSOR_SHAPE_MISMATCH);
      return decoded.v;
    },
  };
}
