import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addAuditDrops } from '@pcg/shared/audit';
import { loadConfig } from '@pcg/shared/config';
import { createDatabase, type Database, type DatabasePool } from '@pcg/shared/db';
import { createRedis, type Redis } from '@pcg/shared/redis';
import { createCapturingLogger, insertTestConnection, waitFor } from '@pcg/testkit/testing';
import { startOwnPostgres, startOwnRedis, type OwnPostgres, type OwnRedis } from '../../../test/support/own-stores.ts';
import { buildApp } from '../src/app.ts';
import { consoleConfigSchema } from '../src/config.ts';
import { statusPartDown } from '../src/routes/status.ts';

// Stores of this file's own, stopped in turn: never the run's shared ones.
let postgres: OwnPostgres;
let redis: OwnRedis;
let database: Database;
let db: DatabasePool;
let client: Redis;
let app: FastifyInstance;

beforeAll(async () => {
  [postgres, redis] = await Promise.all([startOwnPostgres(), startOwnRedis()]);
  database = await createDatabase(postgres.databaseUrl, { maximumPoolSize: 2 });
  db = database.pool;
  const settings = { REDIS_URL: redis.url, REDIS_PREFIX: 'own:' };
  client = createRedis(settings, 'commands');
  client.on('error', () => {});
  const config = loadConfig(consoleConfigSchema, { DATABASE_URL: postgres.databaseUrl, ...settings, LOG_LEVEL: 'silent' });
  app = buildApp({ config, log: createCapturingLogger().log, db, direct: database.direct, redis: client });
  await insertTestConnection(db, { sector: 'home', provider: 'home-assistant' });
  await addAuditDrops(db, 'gateway', { lostWithRedis: 7 });
});
afterAll(async () => {
  await app?.close();
  client?.disconnect();
  await database?.end();
  await redis?.dispose();
  await postgres?.dispose();
});

const status = async () => {
  const answer = await app.inject({ method: 'GET', url: '/api/status' });
  return { code: answer.statusCode, body: answer.json() };
};

describe('GET /api/status with a dependency down', () => {
  it('answers 200 with every part while both answer', async () => {
    const { code, body } = await status();
    expect(code).toBe(200);
    expect(body.dependencies).toEqual({ postgres: 'up', redis: 'up' });
    expect(body.audit).toMatchObject({ queued: 0, dropped: { lostWithRedis: 7 } });
  });

  it('answers 503 naming Redis while Redis is down, with what Postgres still gives', async () => {
    await redis.stop();
    try {
      const { body } = await waitFor(async () => {
        const answer = await status();
        return answer.code === 503 ? answer : undefined;
      }, 10_000, 'the status to see Redis down');
      expect(body.dependencies).toEqual({ postgres: 'up', redis: 'down' });
      expect(body.connections).toMatchObject([{ sector: 'home', provider: 'home-assistant' }]);
      expect(body.audit).toEqual({ queued: statusPartDown('redis'), dropped: expect.objectContaining({ lostWithRedis: 7 }) });
      expect(body.queues).toEqual({ sync: statusPartDown('redis'), live: statusPartDown('redis') });
      expect(body.mcp).toMatchObject(statusPartDown('redis'));
    } finally {
      await redis.start();
    }
    await waitFor(async () => ((await status()).code === 200 ? true : undefined), 20_000, 'the status to see Redis back');
  });

  it('answers 503 naming Postgres while Postgres is down, with what Redis still gives', async () => {
    await postgres.stop();
    try {
      const { code, body } = await status();
      expect(code).toBe(503);
      expect(body.dependencies).toEqual({ postgres: 'down', redis: 'up' });
      expect(body.connections).toEqual(statusPartDown('postgres'));
      expect(body.audit).toEqual({ queued: 0, dropped: statusPartDown('postgres') });
      expect(body.queues.sync).toMatchObject({ waiting: 0, active: 0 });
      expect(body.mcp).toMatchObject({ served: false });
    } finally {
      await postgres.start();
    }
    await waitFor(async () => ((await status()).code === 200 ? true : undefined), 20_000, 'the status to see Postgres back');
  });
});
