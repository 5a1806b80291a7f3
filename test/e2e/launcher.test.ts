import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { waitFor } from '@pcg/testkit/testing';
import { freePort, withDatabase } from '../../scripts/local-services/index.ts';

const root = path.resolve(import.meta.dirname, '../..');
const database = `pcg_launch_${process.pid}_${Date.now().toString(36)}`;
let dataDir: string;

type Launched = { child: ChildProcess; output: () => string; exited: Promise<number | null> };

function launch(env: Record<string, string>): Launched {
  let output = '';
  const child = spawn(process.execPath, [path.join(root, 'scripts/launcher.ts')], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/root', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

function childPids(parentPid: number): number[] {
  const result = spawnSync('pgrep', ['-P', String(parentPid)], { encoding: 'utf8' });
  return result.stdout.split('\n').filter(Boolean).map(Number);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function answers(url: string): Promise<Response | undefined> {
  try {
    return await fetch(url);
  } catch {
    return undefined;
  }
}

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'pcg-launch-'));
});

afterAll(async () => {
  await rm(dataDir, { recursive: true, force: true });
  const admin = new pg.Client({ connectionString: inject('pgServerUrl') });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(database)} WITH (FORCE)`);
  await admin.end();
});

describe('npm start (the launcher)', () => {
  it('creates the database, runs the four services, restarts a crashed one, and stops them all on SIGINT with status 0', async () => {
    const restPort = await freePort();
    const mcpPort = await freePort();
    const launched = launch({
      DATABASE_URL: withDatabase(inject('pgServerUrl'), database),
      REDIS_URL: inject('redisUrl'),
      REDIS_PREFIX: `pcg-launch-${process.pid}:`,
      REST_PORT: String(restPort),
      MCP_HTTP_PORT: String(mcpPort),
      DATA_DIR: dataDir,
    });
    try {
      const health = await waitFor(async () => {
        const response = await answers(`http://127.0.0.1:${restPort}/healthz`);
        return response?.status === 200 ? response : undefined;
      }, 30_000, 'the console to answer /healthz');
      expect(health.status).toBe(200);
      expect(launched.output()).toContain(`created database ${database}`);

      const gateway = await waitFor(() => answers(`http://127.0.0.1:${mcpPort}/anything`), 15_000, 'the gateway');
      expect(gateway.status).toBe(404);
      for (const name of ['console', 'gateway', 'audit-writer', 'sync-worker']) {
        await waitFor(() => (launched.output().includes(`"msg":"${name} ready"`) ? true : undefined), 15_000, `${name} ready`);
      }
      const pids = childPids(launched.child.pid ?? -1);
      expect(pids).toHaveLength(4);

      // A crashed child comes back on its own.
      const consolePid = pids.find((pid) => spawnSync('ps', ['-o', 'args=', '-p', String(pid)], { encoding: 'utf8' }).stdout.includes('console'));
      expect(consolePid).toBeDefined();
      process.kill(consolePid ?? -1, 'SIGKILL');
      await waitFor(() => (launched.output().includes('console exited') ? true : undefined), 5_000, 'the crash to be noticed');
      await waitFor(async () => ((await answers(`http://127.0.0.1:${restPort}/healthz`))?.status === 200 ? true : undefined), 15_000, 'the restarted console');

      const everyChild = childPids(launched.child.pid ?? -1);
      launched.child.kill('SIGINT');
      expect(await launched.exited).toBe(0);
      expect(everyChild.filter(alive)).toEqual([]);
      expect(launched.output()).toContain('[launcher] stopped');
    } finally {
      if (launched.child.exitCode === null) launched.child.kill('SIGKILL');
    }
  }, 90_000);

  it('stops before starting anything when REST_PORT is not a port, naming REST_PORT', async () => {
    const launched = launch({ REST_PORT: 'abc', DATA_DIR: dataDir });
    expect(await launched.exited).toBe(1);
    expect(launched.output()).toMatch(/REST_PORT="abc": must be a port number/);
    expect(launched.output()).not.toContain('ready');
  });
});
