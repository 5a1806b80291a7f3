import {
  createPool as createSlonikPool,
  SchemaValidationError,
  type DatabasePool,
  type Interceptor,
  type QueryResultRow,
} from 'slonik';
import { attachDirectReads } from './direct-reads.ts';
import { TYPE_PARSERS } from './type-parsers.ts';

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

export type PoolOptions = {
  /** Default 10. */
  maximumPoolSize?: number;
  /** Statement timeout in milliseconds; default 30000. */
  statementTimeout?: number;
};

export async function createPool(databaseUrl: string, options: PoolOptions = {}): Promise<DatabasePool> {
  const limits = {
    maximumPoolSize: options.maximumPoolSize ?? 10,
    statementTimeout: options.statementTimeout ?? 30_000,
    connectionTimeout: 10_000,
    idleTimeout: 10_000,
  };
  const pool = await createSlonikPool(databaseUrl, {
    interceptors: [resultParserInterceptor],
    typeParsers: [...TYPE_PARSERS],
    ...limits,
    // Slonik's default runs DISCARD ALL each time a connection goes back to the pool: one more round
    // trip per query. It guards against session state left behind (SET, temporary tables, LISTEN);
    // nothing here creates any, so a connection is handed on as it is.
    resetConnection: async () => undefined,
  });
  attachDirectReads(pool, databaseUrl, limits);
  return pool;
}

export type { DatabasePool } from 'slonik';
