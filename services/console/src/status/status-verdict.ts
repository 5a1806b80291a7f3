/**
 * The Status screen's answer to "is everything all right?" (issue 39): the problems found in the parts of
 * `GET /api/status`, each with what mends it, and the overall state they add up to. Failing: a store is
 * down or the agent port is not served. Needs attention: a connection needs the person, a sync job failed in
 * the last 24 hours, audit rows were dropped, the audit chain is not verified intact, or a process is not
 * seen. Pure: the route reads the parts, this only judges them.
 */
export const OVERALL_STATES = ['ok', 'attention', 'failing'] as const;
export type OverallState = (typeof OVERALL_STATES)[number];

export type StatusProblem = {
  problem: 'store_down' | 'mcp_not_served' | 'connection_needs_person' | 'job_failed' | 'audit_rows_dropped' | 'chain_not_verified' | 'chain_broken' | 'process_not_seen';
  severity: Exclude<OverallState, 'ok'>;
  message: string;
  /** What the operator does about it. */
  mend: string;
  connectionId?: string;
  process?: string;
};

export type VerdictInput = {
  dependencies: { postgres: 'up' | 'down'; redis: 'up' | 'down' };
  /** null: unknown (Redis is down, which is failing on its own). */
  mcpServed: boolean | null;
  connections: ReadonlyArray<{ id: string; display_name: string; status: string }> | null;
  failedJobs: ReadonlyArray<{ connectionId: string | null; connectionName: string | null; error: string }> | null;
  droppedRows: number | null;
  /** The last walk of the chain in this Console, or null when none ran since it started. */
  chain: { intact: boolean } | null;
  processes: ReadonlyArray<{ name: string; state: 'running' | 'not_seen' }>;
};

export function judgeStatus(input: VerdictInput): { state: OverallState; problems: StatusProblem[] } {
  const problems: StatusProblem[] = [];
  for (const store of ['postgres', 'redis'] as const) {
    if (input.dependencies[store] === 'down') {
      const name = store === 'postgres' ? 'Postgres' : 'Redis';
      problems.push({ problem: 'store_down', severity: 'failing', message: `${name} does not answer.`, mend: `Start ${name} or check DATABASE_URL / REDIS_URL; the services reconnect on their own.` });
    }
  }
  if (input.mcpServed === false) {
    problems.push({ problem: 'mcp_not_served', severity: 'failing', message: 'The agent port is not served: agents cannot connect.', mend: 'Set MCP_HTTP_PORT (default 8788) and restart the service.' });
  }
  for (const connection of input.connections ?? []) {
    if (connection.status === 'needs_sign_in') {
      problems.push({
        problem: 'connection_needs_person',
        severity: 'attention',
        message: `${connection.display_name} needs you: its sign-in or token was refused.`,
        mend: 'Sign in again or replace the token on its card.',
        connectionId: connection.id,
      });
    }
  }
  // One problem per connection, with its newest error and how often it failed (the jobs come newest first).
  const byConnection = new Map<string | null, { name: string | null; error: string; count: number }>();
  for (const job of input.failedJobs ?? []) {
    const seen = byConnection.get(job.connectionId);
    if (seen) seen.count += 1;
    else byConnection.set(job.connectionId, { name: job.connectionName, error: job.error, count: 1 });
  }
  for (const [connectionId, failed] of byConnection) {
    const times = failed.count === 1 ? 'A sync' : `${failed.count} syncs`;
    problems.push({
      problem: 'job_failed',
      severity: 'attention',
      message: `${times} of ${failed.name ?? 'a removed connection'} failed in the last 24 hours: ${failed.error}`,
      mend: connectionId ? 'Check the connection, then sync it again.' : 'Nothing to mend: the connection is gone.',
      ...(connectionId ? { connectionId } : {}),
    });
  }
  if (input.droppedRows !== null && input.droppedRows > 0) {
    problems.push({
      problem: 'audit_rows_dropped',
      severity: 'attention',
      message: `${input.droppedRows} audit row${input.droppedRows === 1 ? ' was' : 's were'} dropped: calls happened that the ledger does not show.`,
      mend: 'Keep Redis and Postgres up and the audit writer running; see the audit writer’s log for when.',
    });
  }
  if (input.chain === null) {
    problems.push({ problem: 'chain_not_verified', severity: 'attention', message: 'The audit chain has not been verified since the Console started.', mend: 'Verify the chain.' });
  } else if (!input.chain.intact) {
    problems.push({ problem: 'chain_broken', severity: 'attention', message: 'The audit chain is not intact: a row was changed, removed or added outside the writer.', mend: 'See the break on the ledger screen and restore the record from a backup.' });
  }
  for (const process of input.processes) {
    // A gateway not serving the agent port is said once, as failing.
    if (process.state === 'not_seen' && !(process.name === 'gateway' && input.mcpServed === false)) {
      problems.push({ problem: 'process_not_seen', severity: 'attention', message: `The ${process.name} is not running (no sign of it for the last few seconds).`, mend: 'Start it with npm start (or its container).', process: process.name });
    }
  }
  const state: OverallState = problems.some((problem) => problem.severity === 'failing') ? 'failing' : problems.length > 0 ? 'attention' : 'ok';
  return { state, problems };
}
