import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { inject } from 'vitest';
import { waitFor } from '@pcg/testkit/testing';
import { freePort, withDatabase } from '../../scripts/local-services/index.ts';
import { guardedChildEnv } from '../support/no-internet-guard.ts';

export type LaunchedStack = {
  consoleUrl: string;
  mcpUrl: string;
  databaseUrl: string;
  /** The launcher's process id; the four services are its children. */
  pid: number;
  output(): string;
  /** SIGINT, as Ctrl-C; resolves with the launcher's exit status. */
  stop(): Promise<number | null>;
};

const root = path.resolve(import.meta.dirname, '../..');

/**
 * `npm start` as a user runs it, on this test run's Postgres and Redis with a fresh database and ports, or
 * on stores of the test's own (`stores`), which the test owns and cleans up.
 */
export async function launchStack(name: string, env: Record<string, string> = {}, stores?: { databaseUrl: string; redisUrl: string }): Promise<LaunchedStack> {
  const database = `pcg_${name}_${process.pid}_${Date.now().toString(36)}`;
  const databaseUrl = stores?.databaseUrl ?? withDatabase(inject('pgServerUrl'), database);
  const dataDir = await mkdtemp(path.join(os.tmpdir(), `pcg-${name}-`));
  const restPort = await freePort();
  const mcpPort = await freePort();
  let output = '';
  const child: ChildProcess = spawn(process.execPath, [path.join(root, 'scripts/launcher.ts')], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/root',
      ...guardedChildEnv(),
      DATABASE_URL: databaseUrl,
      REDIS_URL: stores?.redisUrl ?? inject('redisUrl'),
      REDIS_PREFIX: `pcg-${name}-${process.pid}:`,
      REST_PORT: String(restPort),
      MCP_HTTP_PORT: String(mcpPort),
      DATA_DIR: dataDir,
      AUDIT_FLUSH_MS: '200',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  for (const service of ['console', 'gateway', 'audit-writer', 'sync-worker']) {
    await waitFor(() => (output.includes(`"msg":"${service} ready"`) ? true : undefined), 30_000, `${service} ready\n${output}`);
  }
  return {
    consoleUrl: `http://127.0.0.1:${restPort}`,
    mcpUrl: `http://127.0.0.1:${mcpPort}/mcp`,
    databaseUrl,
    pid: child.pid ?? 0,
    output: () => output,
    async stop() {
      if (child.exitCode === null) child.kill('SIGINT');
      const status = await exited;
      await rm(dataDir, { recursive: true, force: true });
      if (stores) return status;
      const admin = new pg.Client({ connectionString: inject('pgServerUrl') });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(database)} WITH (FORCE)`);
      await admin.end();
      return status;
    },
  };
}
