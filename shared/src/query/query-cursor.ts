import { createHmac, hash, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { QueryError } from './query-errors.ts';
import type { QueryPlan } from './query-plan.ts';

export const INVALID_CURSOR = 'cursor: not a cursor this gateway issued; pass next_cursor from the previous page unchanged';
export const CURSOR_SHAPE_MISMATCH =
  'cursor: it belongs to another query; repeat the same object, where and order_by as the query that returned it';

/**
 * Version of what a cursor holds: 2 is each order column's exact Postgres text. A cursor of version 1
 * (served values, instants cut to milliseconds) would page wrongly, so it no longer matches any shape.
 */
const CURSOR_FORMAT = 2;

/** What a cursor is bound to: the object, the filters, the order and any grouping. The page size may change. */
export function queryShape(plan: QueryPlan): string {
  const shape = {
    f: CURSOR_FORMAT,
    o: plan.object.name,
    w: plan.filters.map((filter) => [filter.field.name, filter.op, filter.value]),
    s: plan.order.map((entry) => [entry.field.name, entry.direction]),
    // Absent for rows, so a cursor of a row query keeps its shape.
    a: plan.aggregate && {
      g: plan.aggregate.groupBy.map((group) => [group.field.name, group.bucket ?? null]),
      m: plan.aggregate.metrics.map((metric) => metric.alias),
      z: plan.aggregate.groupBy.some((group) => group.bucket) ? plan.aggregate.zone : undefined,
    },
  };
  return hash('sha256', JSON.stringify(shape), 'base64url').slice(0, 22);
}

/** The order columns of the last row of the previous page, as Postgres's text of each (null when missing). */
export type CursorValues = ReadonlyArray<string | null>;

const PayloadSchema = z.object({ s: z.string(), v: z.array(z.string().nullable()) });

export type CursorCodec = {
  encode(shape: string, values: CursorValues): string;
  /** Throws a QueryError when the cursor is tampered with, foreign, or of another query. */
  decode(shape: string, cursor: string): CursorValues;
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
      const decoded = PayloadSchema.safeParse(JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')));
      if (!decoded.success) throw new QueryError(INVALID_CURSOR);
      if (decoded.data.s !== shape) throw new QueryError(CURSOR_SHAPE_MISMATCH);
      return decoded.data.v;
    },
  };
}
