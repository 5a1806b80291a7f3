import { describe, expect, it } from 'vitest';
import { judgeStatus, type VerdictInput } from '../src/status/status-verdict.ts';

const allWell: VerdictInput = {
  dependencies: { postgres: 'up', redis: 'up' },
  mcpServed: true,
  connections: [{ id: 'c1', display_name: 'Hall hub', status: 'active' }],
  failedJobs: [],
  droppedRows: 0,
  chain: { intact: true },
  processes: [
    { name: 'console', state: 'running' },
    { name: 'gateway', state: 'running' },
  ],
};

// Issue 39: failing when a store is down or the agent port is not served; needs attention when a
// connection needs the person, a job failed in the last 24 h, audit rows were dropped, or the chain is not
// verified intact.
describe('the overall state of the Status screen', () => {
  it('is ok with nothing to mend', () => {
    expect(judgeStatus(allWell)).toEqual({ state: 'ok', problems: [] });
  });

  it.each([
    ['Postgres is down', { dependencies: { postgres: 'down', redis: 'up' } }, 'store_down'],
    ['Redis is down', { dependencies: { postgres: 'up', redis: 'down' } }, 'store_down'],
    ['the agent port is not served', { mcpServed: false }, 'mcp_not_served'],
  ] as const)('is failing when %s', (_case, change, problem) => {
    const verdict = judgeStatus({ ...allWell, ...change });
    expect(verdict.state).toBe('failing');
    expect(verdict.problems.map((found) => found.problem)).toEqual([problem]);
  });

  it.each([
    ['a connection needs the person', { connections: [{ id: 'c1', display_name: 'Hall hub', status: 'needs_sign_in' }] }, 'connection_needs_person'],
    ['a job failed in the last 24 h', { failedJobs: [{ connectionId: 'c1', connectionName: 'Hall hub', error: 'the hub answered 401' }] }, 'job_failed'],
    ['audit rows were dropped', { droppedRows: 3 }, 'audit_rows_dropped'],
    ['the chain was not verified', { chain: null }, 'chain_not_verified'],
    ['the chain is not intact', { chain: { intact: false } }, 'chain_broken'],
  ] as const)('needs attention when %s', (_case, change, problem) => {
    const verdict = judgeStatus({ ...allWell, ...change });
    expect(verdict.state).toBe('attention');
    expect(verdict.problems.map((found) => found.problem)).toEqual([problem]);
    expect(verdict.problems[0]?.mend.length).toBeGreaterThan(0);
  });

  it('names a failed job by its connection and error, once per connection with how often it failed', () => {
    const verdict = judgeStatus({
      ...allWell,
      failedJobs: [
        { connectionId: 'c1', connectionName: 'Hall hub', error: 'the hub answered 401' },
        { connectionId: 'c1', connectionName: 'Hall hub', error: 'timed out' },
      ],
    });
    expect(verdict.problems).toEqual([expect.objectContaining({ problem: 'job_failed', connectionId: 'c1', message: '2 syncs of Hall hub failed in the last 24 hours: the hub answered 401' })]);
  });

  it('is failing, not merely attention, when both kinds of problem are present', () => {
    expect(judgeStatus({ ...allWell, mcpServed: false, droppedRows: 1 }).state).toBe('failing');
  });
});
