import { z } from 'zod';
import { sql, type DatabasePool } from '../db/index.ts';
import type { AuditCursorPosition } from './audit-cursor.ts';
import { AuditRowSchema, type AuditRow, type QueuedAuditRow } from './audit-types.ts';
import { insertChainedAuditRows } from './audit-chain-queries.ts';

/**
 * Writes a batch with ONE INSERT (design 4.6) in a transaction of its own, as the next links of the hash
 * chain (`insertChainedAuditRows`; the audit-writer calls that inside its own transaction). Two choices
 * keep a flush near COPY speed (`npm run bench:audit`): the arrays travel in Postgres's binary format (see
 * `encodePgArray`), and `unnest` sits in the select list, where the arrays are read in lockstep row by row
 * (a `FROM unnest(a, b, …)` first materialises the whole batch, and spills to disk past work_mem). Every
 * row of one flush shares one `created_at`; ids follow the batch's order. All rows are written, or none.
 * Resolves to the number written.
 */
export async function insertAuditRows(
  db: Pick<DatabasePool, 'transaction'>,
  rows: readonly QueuedAuditRow[],
  options: { key?: Buffer | null } = {},
): Promise<number> {
  if (rows.length === 0) return 0;
  return db.transaction(async (tx) => (await insertChainedAuditRows(tx, rows, options)).written);
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
