import { execFile } from 'node:child_process';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '@pcg/shared/db';
import { z } from 'zod';
import { useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { connectAgent } from '../../services/gateway/test/gateway-harness.ts';
import { startConsoleAndGateway, startTestAuditWriter } from './ops-harness.ts';

const testEnv = useTestEnvironment();
const PCG = path.resolve(import.meta.dirname, '../../scripts/pcg.ts');
let stack: Awaited<ReturnType<typeof startConsoleAndGateway>>;
let writer: Awaited<ReturnType<typeof startTestAuditWriter>>;

beforeAll(async () => {
  stack = await startConsoleAndGateway(testEnv);
  writer = await startTestAuditWriter(testEnv);
});
afterAll(async () => {
  await writer.close();
  await stack.close();
});

/** `pcg` as an operator runs it: a process of its own, pointed at the test Console through REST_PORT. */
async function pcg(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const port = new URL(stack.console.address).port;
  const run = promisify(execFile)(process.execPath, [PCG, ...args], { env: { PATH: process.env.PATH ?? '', REST_PORT: port, ...env }, timeout: 30_000 });
  try {
    const { stdout, stderr } = await run;
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout: string; stderr: string };
    if (typeof failed.code !== 'number') throw error;
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}
const json = (result: unknown) => JSON.parse((result as { content: Array<{ text: string }> }).content[0]?.text ?? '') as Record<string, unknown>;

describe('the operator CLI against a running Console', () => {
  it('creates an agent whose key, printed once, works on /mcp; revoking it shuts that key out', async () => {
    const created = await pcg(['agents', 'create', 'cli-made', '--sectors', 'home,health', '--expires-in-days', '30', '--json']);
    expect(created.code).toBe(0);
    const issued = JSON.parse(created.stdout) as { name: string; sectors: string[]; key: string; expiresAt: string };
    expect(issued.name).toBe('cli-made');
    expect(issued.sectors.toSorted()).toEqual(['health', 'home']);
    expect(issued.expiresAt).not.toBeNull();

    const { client } = await connectAgent(stack.gateway.address, issued.key);
    expect((json(await client.callTool({ name: 'describe_context', arguments: {} })).sectors as string[]).toSorted()).toEqual(['health', 'home']);
    await client.close();

    const listed = await pcg(['agents', 'list', '--json']);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([expect.objectContaining({ name: 'cli-made', status: 'active' })]);
    // The key is shown on create and rotate only.
    expect(listed.stdout).not.toContain(issued.key);

    const tail = await waitFor(async () => {
      const answer = await pcg(['audit', 'tail', '--agent', 'cli-made', '--json']);
      const rows = (JSON.parse(answer.stdout) as { rows: Array<Record<string, unknown>> }).rows;
      return answer.code === 0 && rows.length > 0 ? rows : undefined;
    }, 15_000, 'the tool call to reach the audit record');
    expect(tail[0]).toMatchObject({ agent_id: 'cli-made', tool: 'describe_context', decision: 'allow' });

    expect((await pcg(['agents', 'revoke', 'cli-made'])).code).toBe(0);
    await expect(connectAgent(stack.gateway.address, issued.key)).rejects.toThrow();
  });

  it('verifies the audit chain: exit 0 while it is intact, 1 with the broken row named once a row is edited', async () => {
    // The written rows of the test above are chained by the audit-writer.
    await waitFor(async () => ((await testEnv.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM audit_log WHERE row_hash IS NOT NULL`)) > 0 ? true : undefined), 15_000, 'a chained row');
    const intact = await pcg(['audit', 'verify', '--json']);
    expect(intact.code).toBe(0);
    expect(JSON.parse(intact.stdout)).toMatchObject({ intact: true, break: null });

    await testEnv.db.query(sql.unsafe`UPDATE audit_log SET args = '{"edited":true}'::jsonb WHERE id = (SELECT min(id) FROM audit_log WHERE row_hash IS NOT NULL)`);
    const broken = await pcg(['audit', 'verify']);
    expect(broken.code).toBe(1);
    expect(broken.stdout).toMatch(/audit chain BROKEN/);
    expect(broken.stdout).toMatch(/edited at row 1/);
  });

  it('prints a table for people, and the key once with a warning on stderr', async () => {
    const created = await pcg(['agents', 'create', 'cli-table', '--sectors', '']);
    expect(created.code).toBe(0);
    expect(created.stdout).toMatch(/^key\s+pcg_/m);
    expect(created.stderr).toContain('shown this once');
    const rotated = await pcg(['agents', 'rotate', 'cli-table']);
    expect(rotated.stdout).toMatch(/^key\s+pcg_/m);
    const listed = await pcg(['agents', 'list']);
    expect(listed.stdout.split('\n')[0]).toMatch(/^name\s+status\s+sectors/);
    expect((await pcg(['agents', 'delete', 'cli-table'])).stdout).toBe('deleted cli-table\n');
  });

  it('lists, pauses and resumes connections, and shows the status', async () => {
    const added = await fetch(`${stack.console.address}/api/connections`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ provider: 'health-auto-export', displayName: 'My phone' }),
    });
    const { connection } = (await added.json()) as { connection: { id: string } };
    const listed = JSON.parse((await pcg(['connections', 'list', '--json'])).stdout) as Array<{ id: string; status: string }>;
    expect(listed).toEqual([expect.objectContaining({ id: connection.id, status: 'active' })]);
    expect(JSON.parse((await pcg(['connections', 'pause', connection.id, '--json'])).stdout).connection.status).toBe('paused');
    expect(JSON.parse((await pcg(['connections', 'resume', connection.id, '--json'])).stdout).connection.status).toBe('active');

    const status = await pcg(['status', '--json']);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ dependencies: { postgres: 'up', redis: 'up' }, mcp: { served: true } });
  });

  it('exits 1 with the Console\'s reason when it refuses, 2 on a usage error', async () => {
    const refused = await pcg(['agents', 'revoke', 'nobody']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/the Console answered 404/);
    const badFilter = await pcg(['audit', 'tail', '--limit', 'many']);
    expect(badFilter.code).toBe(1);
    expect(badFilter.stderr).toContain("invalid 'limit'");

    for (const args of [[], ['agents'], ['agents', 'fly'], ['agents', 'create', 'x'], ['status', '--bogus'], ['agents', 'edit', 'x']]) {
      const usage = await pcg(args);
      expect({ args, code: usage.code }).toEqual({ args, code: 2 });
      expect(usage.stderr).toContain('usage: pcg');
    }
  });

  it('says that no Console answers, and how to start one, with exit 1', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const answer = await pcg(['agents', 'list'], { REST_PORT: String(port) });
    expect(answer.code).toBe(1);
    expect(answer.stderr).toContain(`no Console answers at http://127.0.0.1:${port} (ECONNREFUSED)`);
    expect(answer.stderr).toContain('npm start');
  });
});
