import {
  createPool as createSlonikPool,
  SchemaValidationError,
  type DatabasePool,
  type Interceptor,
  type QueryResultRow,
} from 'slonik';
import { parseTimestamp, parseTimestamptz } from './timestamp-parsers.ts';

/**
 * Rejects any row that does not match the `sql.type(schema)` it was queried with, so a drifting
 * column fails loudly instead of leaking an unexpected shape to the wire.
 */
const resultParserInterceptor: Interceptor = {
  name: 'pcg-result-parser',
  transformRow(queryContext, query, row) {
    const parser = queryContext.resultParser;
    if (!parser || acceptsEveryRow(parser)) return row;
    const result = parser['~standard'].validate(row);
    if (result instanceof Promise) throw new TypeError('asynchronous result parsers are not supported');
    if (result.issues) throw new SchemaValidationError(query, row, result.issues);
    return result.value as QueryResultRow;
  },
};

const everyRow = new WeakMap<object, boolean>();

/**
 * Whether a row schema is zod's `record(string, unknown)`: every row Postgres returns matches it (its
 * keys are column names), so validating would only copy the row, for every row of every read.
 */
function acceptsEveryRow(parser: object): boolean {
  let known = everyRow.get(parser);
  if (known === undefined) {
    const def = (parser as { _zod?: { def?: { type?: string; keyType?: { _zod?: { def?: { type?: string } } }; valueType?: { _zod?: { def?: { type?: string } } } } } })._zod?.def;
    known = def?.type === 'record' && def.keyType?._zod?.def?.type === 'string' && def.valueType?._zod?.def?.type === 'unknown';
    everyRow.set(parser, known);
  }
  return known;
}

function parseInt8(value: string): number {
  const parsed = Number(value);
  if (!Number.isSafeInteger(parsed)) throw new RangeError(`int8 value ${value} is outside the safe integer range`);
  return parsed;
}

/**
 * Type parsers for the shapes the wire needs: int8 as a number (BigInt breaks JSON.stringify; ids that
 * may exceed 2^53 are selected as text), numeric as its exact decimal string (money), and timestamps as
 * ISO 8601 UTC strings with milliseconds (Postgres's own text for a value that has none, such as
 * `infinity`: a parser that throws would fail every read of that row). Dates stay `YYYY-MM-DD`.
 */
const typeParsers = [
  { name: 'int8', parse: parseInt8 },
  { name: 'numeric', parse: (value: string) => value },
  { name: 'timestamptz', parse: parseTimestamptz },
  { name: 'timestamp', parse: parseTimestamp },
  { name: 'date', parse: (value: string) => value },
];

export type PoolOptions = {
  /** Default 10. */
  maximumPoolSize?: number;
  /** Statement timeout in milliseconds; default 30000. */
  statementTimeout?: number;
};

export async function createPool(databaseUrl: string, options: PoolOptions = {}): Promise<DatabasePool> {
  return createSlonikPool(databaseUrl, {
    interceptors: [resultParserInterceptor],
    typeParsers,
    maximumPoolSize: options.maximumPoolSize ?? 10,
    statementTimeout: options.statementTimeout ?? 30_000,
    connectionTimeout: 10_000,
    idleTimeout: 10_000,
    // Slonik's default runs DISCARD ALL each time a connection goes back to the pool: one more round
    // trip per query. It guards against session state left behind (SET, temporary tables, LISTEN);
    // nothing here creates any, so a connection is handed on as it is.
    resetConnection: async () => undefined,
  });
}

export type { DatabasePool } from 'slonik';
