import { z } from 'zod';
import { sql, type DatabasePool } from '../db/index.ts';
import type { AuditCursorPosition } from './audit-cursor.ts';
import { AuditRowSchema, type AuditRow, type QueuedAuditRow } from './audit-types.ts';
import { encodePgArray } from './pg-binary-array.ts';

/**
 * Writes a batch with ONE statement (design 4.6): one array per column, unnested, so the statement has
 * ten parameters whatever the batch size. Two choices keep a flush near COPY speed (`npm run bench:audit`):
 * the arrays travel in Postgres's binary format (see `encodePgArray`), and `unnest` sits in the select
 * list, where the arrays are read in lockstep row by row (a `FROM unnest(a, b, …)` first materialises
 * the whole batch, and spills to disk past work_mem). `created_at` is `now()`, the statement's
 * transaction time, so every row of one flush shares one instant; ids follow the batch's order. The
 * statement is atomic: all rows are written, or none. Resolves to the number written.
 */
export async function insertAuditRows(db: Pick<DatabasePool, 'query'>, rows: readonly QueuedAuditRow[]): Promise<number> {
  if (rows.length === 0) return 0;
  const text = (pick: (row: QueuedAuditRow) => string | null) =>
    sql.fragment`unnest(${sql.binary(encodePgArray('text', rows.map(pick)))}::text[])`;
  const userIds = sql.binary(encodePgArray('int8', rows.map((row) => row.userId)));
  const resultCounts = sql.binary(encodePgArray('int4', rows.map((row) => row.resultCount)));
  const result = await db.query(sql.unsafe`
    INSERT INTO audit_log
      (user_id, agent_id, tool, sector, decision, deny_reason, args, result_count, outcome, request_id, created_at)
    SELECT
      unnest(${userIds}::int8[]),
      ${text((row) => row.agentId)},
      ${text((row) => row.tool)},
      ${text((row) => row.sector)},
      ${text((row) => row.decision)},
      ${text((row) => row.denyReason)},
      ${text((row) => row.argsJson)}::jsonb,
      unnest(${resultCounts}::int4[]),
      ${text((row) => row.outcome)},
      ${text((row) => row.requestId)},
      now()`);
  return result.rowCount;
}

export type AuditFilters = {
  agent?: string;
  tool?: string;
  decision?: 'allow' | 'deny';
  sector?: string;
  /** A validated ISO 8601 timestamp with its zone; Postgres parses it to the microsecond. */
  since?: string;
};

const PageRowSchema = AuditRowSchema.extend({ position: z.string() });

/**
 * One page of the ledger, newest first: `created_at DESC, id DESC`, a total order even though the rows
 * of one flush share one instant. `before` continues strictly after a row; `limit` rows are returned.
 */
export async function selectAuditRows(
  db: DatabasePool,
  query: { userId: number; filters: AuditFilters; before: AuditCursorPosition | null; limit: number },
): Promise<Array<{ row: AuditRow; position: AuditCursorPosition }>> {
  const { filters, before } = query;
  const conditions = [sql.fragment`user_id = ${query.userId}`];
  if (filters.agent !== undefined) conditions.push(sql.fragment`agent_id = ${filters.agent}`);
  if (filters.tool !== undefined) conditions.push(sql.fragment`tool = ${filters.tool}`);
  if (filters.decision !== undefined) conditions.push(sql.fragment`decision = ${filters.decision}`);
  // Equality is never true for a null sector, so null-sector rows drop out (spec 4.5).
  if (filters.sector !== undefined) conditions.push(sql.fragment`sector = ${filters.sector}`);
  if (filters.since !== undefined) conditions.push(sql.fragment`created_at >= ${filters.since}::timestamptz`);
  if (before) {
    // The plain bound lets the (user_id, created_at DESC) index start at the cursor; the row comparison
    // breaks the tie between rows of one flush.
    conditions.push(sql.fragment`created_at <= ${before.createdAt}::timestamptz`);
    conditions.push(sql.fragment`(created_at, id) < (${before.createdAt}::timestamptz, ${before.id}::int8)`);
  }
  const rows = await db.any(sql.type(PageRowSchema)`
    SELECT id::text AS id, agent_id, tool, sector, decision, deny_reason, args, result_count, outcome,
           request_id, created_at,
           to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS position
    FROM audit_log
    WHERE ${sql.join(conditions, sql.fragment` AND `)}
    -- Qualified: a bare \`id\` here would name the text column of the select list and sort "999" after "1000".
    ORDER BY audit_log.created_at DESC, audit_log.id DESC
    LIMIT ${query.limit}`);
  return rows.map(({ position, ...row }) => ({ row, position: { createdAt: position, id: row.id } }));
}
