import { sql, type CommonQueryMethods, type DatabasePool } from 'slonik';
import { z } from 'zod';
import type { CandidatePair, MatchableAccount } from './account-matches-fns.ts';
import { MatchSideViewSchema } from './account-matches-types.ts';

/** One lock for every reconciliation, so two finance syncs ending together do not race on the same pairs. */
const RECONCILE_LOCK = sql.fragment`hashtextextended('finance_account_matches', 0)`;

const AccountRowSchema = z.object({
  connection_id: z.string(),
  source_id: z.string(),
  connection_rank: z.coerce.number().int(),
  institution_domain: z.string().nullable(),
  name: z.string().nullable(),
  mask: z.string().nullable(),
});

/** One side of a pair as JSON: its connection (`c`), the stable identity, and the cached account (`a`) when there is one. */
const sideJson = (c: string, sourceId: string, a: string) => {
  const col = (table: string, column: string) => sql.identifier([table, column]);
  return sql.fragment`json_build_object(
    'connectionId', ${col(c, 'id')}::text, 'connectionName', ${col(c, 'display_name')}, 'provider', ${col(c, 'provider')},
    'sourceId', ${col('m', sourceId)}, 'accountId', ${col(a, 'id')},
    'institutionName', ${col(a, 'institution_name')}, 'name', ${col(a, 'name')}, 'mask', ${col(a, 'mask')})`;
};

/** A side as stored; its last 4 is worked out from the name and mask afterwards. */
const SideRowSchema = MatchSideViewSchema.omit({ lastFour: true });
export type MatchSideRow = z.infer<typeof SideRowSchema>;

export const MatchRowSchema = z.object({
  id: z.string(),
  institution_domain: z.string(),
  automatic: z.boolean(),
  same: z.boolean().nullable(),
  answered_at: z.string().nullable(),
  created_at: z.string(),
  first: SideRowSchema,
  second: SideRowSchema,
});
export type MatchRow = z.infer<typeof MatchRowSchema>;

const AnsweredSchema = z.object({ id: z.string(), automatic: z.boolean() });
const TransactionCountsSchema = z.object({ id: z.string(), both: z.number(), only_first: z.number(), only_second: z.number() });
export type TransactionCounts = z.infer<typeof TransactionCountsSchema>;

/** Matches the transactions of every pair one by one again (design 8.3; the function of migration 1795300055000). */
async function matchTransactions(tx: CommonQueryMethods): Promise<void> {
  await tx.query(sql.unsafe`SELECT finance_match_transactions()`);
}

/** The one home of SQL on `finance_account_matches`. */
export function createAccountMatchQueries(db: DatabasePool) {
  const rows = (where: ReturnType<typeof sql.fragment>) =>
    db.any(sql.type(MatchRowSchema)`
      SELECT m.id::text AS id, m.institution_domain, m.automatic, m.same, m.answered_at, m.created_at,
        ${sideJson('fc', 'first_source_id', 'fa')} AS first, ${sideJson('sc', 'second_source_id', 'sa')} AS second
      FROM finance_account_matches m
      JOIN connections fc ON fc.id = m.first_connection_id
      JOIN connections sc ON sc.id = m.second_connection_id
      LEFT JOIN finance_accounts fa ON fa.connection_id = m.first_connection_id AND fa.source_id = m.first_source_id
      LEFT JOIN finance_accounts sa ON sa.connection_id = m.second_connection_id AND sa.source_id = m.second_source_id
      WHERE ${where}
      ORDER BY m.same IS NOT NULL, m.institution_domain, m.created_at, m.id`);

  return {
    list: () => rows(sql.fragment`TRUE`),
    get: async (id: string) => (await rows(sql.fragment`m.id = ${id}::uuid`))[0] ?? null,

    /**
     * Brings the unanswered rows in line with the accounts cached now, in one transaction: new pairs are
     * added (automatic ones already merged), unanswered rows follow their pair (a last 4 that appeared or
     * went), and unanswered rows whose pair is gone are deleted. Answered rows are never touched.
     */
    reconcile: (candidates: (accounts: readonly MatchableAccount[]) => CandidatePair[]) =>
      db.transaction(async (tx) => {
        await tx.query(sql.unsafe`SELECT pg_advisory_xact_lock(${RECONCILE_LOCK})`);
        const accounts = await tx.any(sql.type(AccountRowSchema)`
          SELECT a.connection_id::text AS connection_id, a.source_id, dense_rank() OVER (ORDER BY c.created_at, c.id) AS connection_rank,
            a.institution_domain, a.name, a.mask
          FROM finance_accounts a JOIN connections c ON c.id = a.connection_id
          WHERE a.institution_domain IS NOT NULL`);
        const pairs = candidates(
          accounts.map((row) => ({ connectionId: row.connection_id, sourceId: row.source_id, connectionRank: row.connection_rank, institutionDomain: row.institution_domain, name: row.name, mask: row.mask })),
        );
        const written = await writePairs(tx, pairs);
        await matchTransactions(tx);
        return written;
      }),

    /** Records the operator's answer; null when there is no such row. `automatic` rows are left as they are. */
    answer: (id: string, same: boolean) =>
      db.transaction(async (tx) => {
        await tx.query(sql.unsafe`SELECT pg_advisory_xact_lock(${RECONCILE_LOCK})`);
        const answered = await tx.maybeOne(sql.type(AnsweredSchema)`
          WITH target AS (SELECT id, automatic FROM finance_account_matches WHERE id = ${id}::uuid),
          changed AS (
            UPDATE finance_account_matches m SET same = ${same}, answered_at = now(), updated_at = now()
            FROM target WHERE m.id = target.id AND NOT target.automatic RETURNING m.id)
          SELECT target.id::text AS id, target.automatic FROM target`);
        if (answered && !answered.automatic) await matchTransactions(tx);
        return answered;
      }),

    /** How the transactions of each pair match today (design 8.3), for the Console to say what an answer changes. */
    transactionCounts: () =>
      db.any(sql.type(TransactionCountsSchema)`
        SELECT m.id::text AS id,
          count(*) FILTER (WHERE side = 1 AND t.twin IS NOT NULL)::int AS both,
          count(*) FILTER (WHERE side = 1 AND t.twin IS NULL)::int AS only_first,
          count(*) FILTER (WHERE side = 2 AND t.twin IS NULL)::int AS only_second
        FROM finance_account_matches m
        JOIN finance_accounts fa ON fa.connection_id = m.first_connection_id AND fa.source_id = m.first_source_id
        JOIN finance_accounts sa ON sa.connection_id = m.second_connection_id AND sa.source_id = m.second_source_id
        CROSS JOIN LATERAL (VALUES (1, fa.id), (2, sa.id)) AS s(side, account_id)
        JOIN LATERAL (
          SELECT coalesce(x.possible_twin_id, x.merged_into,
            (SELECT y.id FROM finance_transactions y WHERE y.merged_into = x.id LIMIT 1)) AS twin
          FROM finance_transactions x WHERE x.account_id = s.account_id
        ) t ON true
        GROUP BY m.id`),
  };
}

async function writePairs(tx: CommonQueryMethods, pairs: readonly CandidatePair[]): Promise<{ pairs: number }> {
  const records = pairs.map((pair) => ({
    first_connection_id: pair.first.connectionId,
    first_source_id: pair.first.sourceId,
    second_connection_id: pair.second.connectionId,
    second_source_id: pair.second.sourceId,
    institution_domain: pair.institutionDomain,
    automatic: pair.automatic,
  }));
  await tx.query(sql.unsafe`
    WITH found AS (
      SELECT * FROM jsonb_to_recordset(${sql.jsonb(records)})
        AS p(first_connection_id uuid, first_source_id text, second_connection_id uuid, second_source_id text, institution_domain text, automatic boolean)
    ),
    gone AS (
      DELETE FROM finance_account_matches m
      WHERE m.answered_at IS NULL
        AND NOT EXISTS (
          SELECT 1 FROM found f
          WHERE (f.first_connection_id, f.first_source_id, f.second_connection_id, f.second_source_id)
              = (m.first_connection_id, m.first_source_id, m.second_connection_id, m.second_source_id))
    )
    INSERT INTO finance_account_matches (first_connection_id, first_source_id, second_connection_id, second_source_id, institution_domain, automatic, same)
    SELECT first_connection_id, first_source_id, second_connection_id, second_source_id, institution_domain, automatic, CASE WHEN automatic THEN true END
    FROM found
    ON CONFLICT (first_connection_id, first_source_id, second_connection_id, second_source_id) DO UPDATE
      SET automatic = EXCLUDED.automatic, same = EXCLUDED.same, institution_domain = EXCLUDED.institution_domain, updated_at = now()
      WHERE finance_account_matches.answered_at IS NULL
        AND (finance_account_matches.automatic, finance_account_matches.same) IS DISTINCT FROM (EXCLUDED.automatic, EXCLUDED.same)`);
  return { pairs: pairs.length };
}
