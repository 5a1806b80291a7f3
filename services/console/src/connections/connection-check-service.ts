import { CONSOLE_ACTS, OPERATOR_AGENT_ID, type AuditRecorder } from '@pcg/shared/audit';
import { checkAnswer, type ConnectionCheck, type ConnectionQueries } from '@pcg/shared/connections';
import { NotFoundError } from '@pcg/shared/errors';
import { findProvider } from '@pcg/shared/providers';
import { CheckUnansweredError, type CheckRequester } from '@pcg/shared/queues';
import { checkPushConnection } from './push-check.ts';

export type ConnectionCheckServiceDeps = {
  queries: Pick<ConnectionQueries, 'get'>;
  /** The `live` queue's check jobs; absent (no Redis), a pulled connection's check says so. */
  checks?: Pick<CheckRequester, 'check'>;
  audit: AuditRecorder;
  now?: () => number;
};

/**
 * `POST /api/connections/:id/check` (issue 32): a pulled connection is checked by the sync-worker, the
 * one process that talks to sources; a push connection is checked here, asking nothing outward. Leaves
 * exactly one operator row (spec 2.3, 6) — outcome ok when every step passed — and caches nothing.
 */
export function createConnectionCheckService(deps: ConnectionCheckServiceDeps) {
  const now = deps.now ?? Date.now;

  async function run(id: string): Promise<{ check: ConnectionCheck; sector: string }> {
    const row = await deps.queries.get(id);
    if (!row) throw new NotFoundError('no such connection');
    if (findProvider(row.provider)?.signIn === 'push') return { check: checkPushConnection(row, now()), sector: row.sector };
    const unanswered = (message: string) => ({ check: checkAnswer([{ step: 'sync_worker', title: 'The sync-worker runs the check', passed: false, message }], 0), sector: row.sector });
    if (!deps.checks) return unanswered('the check runs in the sync-worker, and the job queue (Redis) is not connected: start Redis and the sync-worker, then check again');
    try {
      return { check: await deps.checks.check(id), sector: row.sector };
    } catch (error) {
      if (error instanceof CheckUnansweredError) return unanswered(`${error.message}: start the sync-worker (npm start) and check again`);
      return unanswered('the job queue (Redis) is not reachable: start it and check again');
    }
  }

  return {
    async check(id: string, requestId?: string): Promise<ConnectionCheck> {
      const record = (outcome: 'ok' | 'error', sector: string | null, args: Record<string, unknown>) =>
        deps.audit.record({ agentId: OPERATOR_AGENT_ID, tool: CONSOLE_ACTS.checkConnection, sector, decision: 'allow', args: { connectionId: id, ...args }, outcome, requestId });
      let result: Awaited<ReturnType<typeof run>>;
      try {
        result = await run(id);
      } catch (error) {
        record('error', null, {});
        throw error;
      }
      const failedSteps = result.check.steps.filter((step) => !step.passed).map((step) => step.step);
      record(result.check.ok ? 'ok' : 'error', result.sector, { requests: result.check.requests, ...(failedSteps.length > 0 ? { failedSteps } : {}) });
      return result.check;
    },
  };
}

export type ConnectionCheckService = ReturnType<typeof createConnectionCheckService>;
