import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '@pcg/shared/db';
import { useTestEnvironment } from '@pcg/testkit/testing';
import { api, collectingAudit, startTestConsole, type TestConsole } from './helpers.ts';

/** Spec 4.5: `GET /api/audit` is scoped to the single user; a row of any other user_id is never served. */
const testEnv = useTestEnvironment();
let consoleService: TestConsole;

beforeAll(async () => {
  consoleService = await startTestConsole(testEnv, collectingAudit().recorder);
  // Written straight to the store: one row of the operator, and, newer, rows of another user.
  await testEnv.db.query(sql.unsafe`
    INSERT INTO audit_log (user_id, agent_id, tool, sector, decision, outcome, request_id, created_at)
    VALUES (1, 'mine', 'query', 'health', 'allow', 'ok', 'req-mine', now() - interval '1 minute'),
           (2, 'theirs', 'query', 'health', 'allow', 'ok', 'req-theirs-1', now()),
           (2, 'mine', 'query', 'health', 'deny', 'error', 'req-theirs-2', now())`);
});
afterAll(async () => consoleService?.close());

describe('GET /api/audit is scoped to the single user', () => {
  it.each(['', '?agent=theirs', '?agent=mine', '?sector=health', '?decision=deny', '?limit=1', '?since=2000-01-01'])(
    'never serves a row of another user_id (%s)',
    async (query) => {
      const answer = await api(consoleService.address, 'GET', `/api/audit${query}`);
      expect(answer.status).toBe(200);
      const ids = (answer.json as Array<{ request_id: string }>).map((row) => row.request_id);
      expect(ids.filter((id) => id.startsWith('req-theirs'))).toEqual([]);
      expect(answer.text).not.toContain('theirs');
    },
  );

  it("pages past the other user's newer rows without counting them", async () => {
    const response = await fetch(`${consoleService.address}/api/audit?limit=1`);
    expect(((await response.json()) as Array<{ request_id: string }>).map((row) => row.request_id)).toEqual(['req-mine']);
    expect(response.headers.get('x-gateway-audit-has-more')).toBe('false');
  });
});
