import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@pcg/shared/config';
import { sql } from '@pcg/shared/db';
import { startHeartbeat } from '@pcg/shared/status';
import { createCapturingLogger, insertTestConnection, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { startConsole, type RunningConsole } from '../../services/console/src/service.ts';
import { DEMO_PROVIDER } from '../../scripts/demo/demo-connections.ts';

// Issue 39 item 7: what `pcg` prints for a person. A Console on this file's database and Redis prefix, with
// no gateway: the test writes the gateway's heartbeat itself, so the session count is the one it chose.
const testEnv = useTestEnvironment();
const root = path.resolve(import.meta.dirname, '../..');
const PCG = path.join(root, 'scripts/pcg.ts');
let consoleService: RunningConsole;

beforeAll(async () => {
  consoleService = await startConsole(loadConfig(consoleConfigSchema, testEnv.env({ REST_PORT: '0', CREDENTIALS_KEY: randomBytes(32).toString('base64') })), createCapturingLogger('console').log);
});
afterAll(async () => consoleService?.close());

async function pcg(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const port = new URL(consoleService.address).port;
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [PCG, ...args], { env: { PATH: process.env.PATH ?? '', REST_PORT: port }, timeout: 30_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout: string; stderr: string };
    if (typeof failed.code !== 'number') throw error;
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('pcg, read by a person', () => {
  // First in this file: the record is still empty, so the chain is intact until a row is slipped in.
  it('audit verify: its --help, its exit statuses and the README name the same codes', async () => {
    const help = await pcg(['audit', 'verify', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: pcg audit verify/);
    const helpIntact = Number(/exit status: (\d) the chain is intact/.exec(help.stdout)?.[1]);
    const helpBroken = Number(/; (\d) the chain is broken/.exec(help.stdout)?.[1]);
    const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
    const row = /\| `pcg audit verify` \|[^\n]*exit (\d) when it is intact, (\d) when it is broken/.exec(readme);
    expect([Number(row?.[1]), Number(row?.[2])]).toEqual([helpIntact, helpBroken]);

    const intact = await pcg(['audit', 'verify']);
    expect(intact.stdout).toMatch(/audit chain intact/);
    expect(intact.code).toBe(helpIntact);
    // A row written around the audit-writer, outside the chain: an insertion the walk reports.
    await testEnv.db.query(sql.unsafe`INSERT INTO audit_log (user_id, agent_id, tool, sector, decision, deny_reason, args, result_count, outcome, request_id)
      VALUES (1, 'slipped-in', 'query', 'home', 'allow', NULL, '{}', 1, 'ok', 's1')`);
    const broken = await pcg(['audit', 'verify']);
    expect(broken.stdout).toMatch(/audit chain BROKEN/);
    expect(broken.code).toBe(helpBroken);
  });

  it('audit tail fills its Time column with each row\'s created_at, as GET /api/audit answers it', async () => {
    await testEnv.db.query(sql.unsafe`INSERT INTO audit_log (user_id, agent_id, tool, sector, decision, deny_reason, args, result_count, outcome, request_id)
      VALUES (1, 'timed', 'query', 'home', 'allow', NULL, '{}', 1, 'ok', 't1')`);
    const [row] = (await (await fetch(`${consoleService.address}/api/audit?agent=timed`)).json()) as Array<{ created_at: string }>;
    const tail = await pcg(['audit', 'tail', '--agent', 'timed']);
    expect(tail.code).toBe(0);
    const [header, line] = tail.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^time\s+agent_id\s+tool/);
    expect(line?.startsWith(`${row?.created_at} `)).toBe(true);
  });

  it('status prints a short summary for a person, "1 session" in the singular, and the Console\'s answer with --json', async () => {
    for (const [sessions, words] of [[1, '1 session open'], [2, '2 sessions open']] as const) {
      const heartbeat = startHeartbeat(testEnv.redis, () => ({ address: 'http://127.0.0.1:8788/mcp', sessions }));
      try {
        const summary = await waitFor(async () => {
          const answer = await pcg(['status']);
          return answer.stdout.includes('served at') ? answer : undefined;
        }, 10_000, 'the heartbeat read by the Console');
        expect(summary.code).toBe(0);
        expect(summary.stdout).toContain(`Agent port   served at http://127.0.0.1:8788/mcp, ${words}`);
        // Words, not JSON objects: no brace anywhere, and the overall state first.
        expect(summary.stdout).not.toMatch(/[{}]/);
        expect(summary.stdout.split('\n')[0]).toMatch(/^(All is well|Needs attention|Failing)/);
        expect(summary.stdout).toContain('Stores       Postgres up, Redis up');
        expect(summary.stdout.split('\n').length).toBeLessThan(25);
      } finally {
        await heartbeat.stop();
      }
    }
    const json = await pcg(['status', '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ dependencies: { postgres: 'up', redis: 'up' }, mcp: { served: false }, overall: { state: 'failing' } });
  });

  it('connections sync on a connection seeded by the demo says it has no source, not that it is a push connection', async () => {
    const seeded = await insertTestConnection(testEnv.db, { sector: 'home', provider: DEMO_PROVIDER, displayName: 'Demo home' });
    const answer = await pcg(['connections', 'sync', seeded]);
    expect(answer.code).toBe(1);
    expect(answer.stderr).toContain('Demo home holds data seeded by the demo');
    expect(answer.stderr).toContain('no source to sync from');
    expect(answer.stderr).not.toContain('push connection');
  });

});
