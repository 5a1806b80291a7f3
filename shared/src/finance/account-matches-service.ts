import type { DatabasePool } from 'slonik';
import { CONSOLE_ACTS, OPERATOR_AGENT_ID, type AuditRecorder } from '../audit/index.ts';
import { ConflictError, NotFoundError } from '../errors/index.ts';
import { candidatePairs, lastFourOf } from './account-matches-fns.ts';
import { createAccountMatchQueries, type MatchRow, type MatchSideRow, type TransactionCounts } from './account-matches-queries.ts';
import type { AccountMatchList, AccountMatchView, MatchSideView } from './account-matches-types.ts';

/** Said when an answer is sent for a pair merged because both sources report the same last 4. */
export const MATCH_IS_AUTOMATIC = 'both sources report the same last 4 digits for these accounts, so they were merged without asking; there is nothing to answer';
export const matchNotFound = (id: string) => `no account match '${id}'; GET /api/finance/account-matches lists the open questions and their ids`;

const sideView = (side: MatchSideRow): MatchSideView => ({ ...side, lastFour: side.accountId ? lastFourOf(side) : null });

function view(row: MatchRow, counts: ReadonlyMap<string, TransactionCounts>): AccountMatchView {
  const count = counts.get(row.id);
  return {
    id: row.id,
    institutionDomain: row.institution_domain,
    state: row.same === null ? 'open' : row.same ? 'same' : 'separate',
    automatic: row.automatic,
    answeredAt: row.answered_at,
    createdAt: row.created_at,
    first: sideView(row.first),
    second: sideView(row.second),
    transactions: { both: count?.both ?? 0, onlyFirst: count?.only_first ?? 0, onlySecond: count?.only_second ?? 0 },
  };
}

export type AccountMatchServiceDeps = { db: DatabasePool; audit?: AuditRecorder };

/**
 * Accounts two finance connections both deliver (spec 2.1). `reconcile` runs after every finance sync:
 * pairs at the same institution domain whose last 4 digits both show and agree are merged; a pair where
 * either side shows none is asked. The operator's answer is kept for good; the read path hides the
 * second account of every pair that is the same (the view `finance_merged_accounts`), and of its
 * transactions those the first account also has (matched one by one after every reconciliation and answer).
 */
export function createAccountMatchService({ db, audit }: AccountMatchServiceDeps) {
  const queries = createAccountMatchQueries(db);
  const countsById = async () => new Map((await queries.transactionCounts()).map((count) => [count.id, count]));
  return {
    reconcile: () => queries.reconcile(candidatePairs),

    async list(): Promise<AccountMatchList> {
      const counts = await countsById();
      const views = (await queries.list()).map((row) => view(row, counts));
      return { open: views.filter((match) => match.state === 'open'), decided: views.filter((match) => match.state !== 'open') };
    },

    /**
     * The operator's answer: "same account" (merge) or "keep separate". It may be changed later; a pair
     * merged automatically is not a question. One Console act row, since it changes what agents read.
     */
    async answer(id: string, same: boolean, requestId?: string): Promise<AccountMatchView> {
      const record = (outcome: 'ok' | 'error') =>
        audit?.record({ agentId: OPERATOR_AGENT_ID, tool: CONSOLE_ACTS.answerAccountMatch, sector: 'finance', decision: 'allow', args: { match: id, same }, outcome, requestId });
      const answered = await queries.answer(id, same);
      if (!answered) {
        record('error');
        throw new NotFoundError(matchNotFound(id));
      }
      if (answered.automatic) {
        record('error');
        throw new ConflictError(MATCH_IS_AUTOMATIC);
      }
      record('ok');
      const row = await queries.get(id);
      if (!row) throw new NotFoundError(matchNotFound(id));
      return view(row, await countsById());
    },
  };
}

export type AccountMatchService = ReturnType<typeof createAccountMatchService>;
