import {
  createPool,
  SchemaValidationError,
  type DatabasePool,
  type Interceptor,
  type QueryResultRow,
} from 'slonik';
import { openDirectPool, type DirectPool } from './direct-reads.ts';
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

/** One database, reached two ways; `end` ends both. */
export type Database = {
  /** slonik's pool: every write, and every read but those of the direct pool. */
  pool: DatabasePool;
  /** pg's own pool (direct-reads.ts): the query engine's reads, the key lookup and the audit-writer's COPY. */
  direct: DirectPool;
  /** Ends both pools; a second call waits for the first. */
  end(): Promise<void>;
};

/**
 * slonik's pool, with the result-parser interceptor and the type parsers, and the direct pool beside it, both
 * with the same limits; neither connects before its first use.
 */
export async function createDatabase(databaseUrl: string, options: PoolOptions = {}): Promise<Database> {
  const limits = {
    maximumPoolSize: options.maximumPoolSize ?? 10,
    statementTimeout: options.statementTimeout ?? 30_000,
    connectionTimeout: 10_000,
    idleTimeout: 10_000,
  };
  const pool = await createPool(databaseUrl, {
    interceptors: [resultParserInterceptor],
    typeParsers: [...TYPE_PARSERS],
    ...limits,
    // Slonik's default runs DISCARD ALL each time a connection goes back to the pool: one more round
    // trip per query. It guards against session state left behind (SET, temporary tables, LISTEN);
    // nothing here creates any, so a connection is handed on as it is.
    resetConnection: async () => undefined,
  });
  const { direct, end: endDirect } = openDirectPool(databaseUrl, limits);
  let ended: Promise<void> | undefined;
  return {
    pool,
    direct,
    end: () => (ended ??= Promise.all([pool.end(), endDirect()]).then(() => undefined)),
  };
}

export type { DatabasePool } from 'slonik';
