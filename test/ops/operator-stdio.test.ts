import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SECTORS } from '@pcg/shared/sectors';
import { readHeartbeat } from '@pcg/shared/status';
import { collectQueuedAuditRows, useTestEnvironment } from '@pcg/testkit/testing';
import { seedDemo } from '../../scripts/demo/seed.ts';

const testEnv = useTestEnvironment();
const PCG = path.resolve(import.meta.dirname, '../../scripts/pcg.ts');
/** One object of each of the six sectors. */
const ONE_OBJECT_PER_SECTOR = ['finance.transaction', 'health.sample', 'mail.message', 'contacts.contact', 'calendar.event', 'home.entity'];
let dataDir: string;

beforeAll(async () => {
  await seedDemo(testEnv.db);
  dataDir = await mkdtemp(path.join(tmpdir(), 'pcg-stdio-'));
}, 120_000);
afterAll(async () => rm(dataDir, { recursive: true, force: true }));

const json = (result: unknown) => JSON.parse((result as { content: Array<{ text: string }> }).content[0]?.text ?? '') as Record<string, unknown>;

describe('pcg mcp: the operator\'s stdio session (spec 5)', () => {
  it('serves the seven tools to the SDK stdio client, reads every sector as the operator, and audits each call as operator', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [PCG, 'mcp'],
      env: { PATH: process.env.PATH ?? '', DATABASE_URL: testEnv.databaseUrl, REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: testEnv.redisPrefix, DATA_DIR: dataDir },
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const client = new Client({ name: 'operator-desktop', version: '1.0.0' });
    try {
      await client.connect(transport);
    } catch (error) {
      throw new Error(`pcg mcp did not start: ${String(error)}\n${stderr}`, { cause: error });
    }

    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).toSorted()).toEqual(['describe_context', 'fetch_live', 'get_record', 'get_schema', 'invoke_action', 'list_actions', 'query']);

    expect((json(await client.callTool({ name: 'describe_context', arguments: {} })).sectors as string[]).toSorted()).toEqual([...SECTORS].toSorted());
    for (const object of ONE_OBJECT_PER_SECTOR) {
      const answer = await client.callTool({ name: 'query', arguments: { object, limit: 1 } });
      expect({ object, isError: answer.isError ?? false }).toEqual({ object, isError: false });
      expect({ object, rows: (json(answer).rows as unknown[]).length }).toEqual({ object, rows: 1 });
    }
    // Never in the Connect band: the stdio session writes no gateway heartbeat.
    expect(await readHeartbeat(testEnv.redis)).toBeNull();

    const rows = await collectQueuedAuditRows(testEnv.redis, 1 + ONE_OBJECT_PER_SECTOR.length);
    expect(rows.map((row) => [row.agentId, row.tool, row.decision])).toEqual([
      ['operator', 'describe_context', 'allow'],
      ...ONE_OBJECT_PER_SECTOR.map(() => ['operator', 'query', 'allow']),
    ]);
    expect(rows.slice(1).map((row) => row.sector)).toEqual(ONE_OBJECT_PER_SECTOR.map((object) => object.split('.')[0]));

    const pid = transport.pid;
    await client.close();
    expect(pid).not.toBeNull();
    expect(() => process.kill(pid as number, 0)).toThrow(/ESRCH/);
  });
});
