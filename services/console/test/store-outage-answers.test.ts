import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@pcg/shared/config';
import { createDatabase, type Database, type DatabasePool } from '@pcg/shared/db';
import { createRedis, type Redis } from '@pcg/shared/redis';
import { createCapturingLogger, createTestAgent, insertTestConnection } from '@pcg/testkit/testing';
import { startOwnPostgres, type OwnPostgres } from '../../../test/support/own-stores.ts';
import { buildApp } from '../src/app.ts';
import { consoleConfigSchema } from '../src/config.ts';
import { collectingAudit } from './helpers.ts';

// A Console on a Postgres of this file's own, which the test stops: while it is down, every route that
// needs it answers 503 with Retry-After and names the store, never a 500 (issue 35 item 3).
let postgres: OwnPostgres;
let database: Database;
let db: DatabasePool;
let redis: Redis;
let app: FastifyInstance;
let key: string;
let pushId: string;

beforeAll(async () => {
  postgres = await startOwnPostgres();
  database = await createDatabase(postgres.databaseUrl, { maximumPoolSize: 2 });
  db = database.pool;
  const settings = { REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379', REDIS_PREFIX: `outage-${process.pid}:` };
  redis = createRedis(settings, 'commands');
  const config = loadConfig(consoleConfigSchema, { DATABASE_URL: postgres.databaseUrl, ...settings, LOG_LEVEL: 'silent' });
  // No sync is asked for while Postgres is down; the producer is here only so the source routes exist.
  const sync = { schedule: async () => {}, unschedule: async () => {}, requestSync: async () => 'no-job' } satisfies NonNullable<Parameters<typeof buildApp>[0]['sources']>['sync'];
  app = buildApp({ config, log: createCapturingLogger().log, db, direct: database.direct, redis, audit: collectingAudit().recorder, sources: { sync, credentialsKey: randomBytes(32) } });
  key = await createTestAgent(db, { name: 'outage', sectors: ['home'] });
  pushId = await insertTestConnection(db, { sector: 'health', provider: 'health-auto-export' });
  await postgres.stop();
}, 120_000);
afterAll(async () => {
  await app?.close();
  redis?.disconnect();
  await database?.end();
  await postgres?.dispose();
});

const POSTGRES_DOWN = { error: 'the database (Postgres) is not answering; try again shortly', code: 'store_unavailable' };
describe('the Console with Postgres down', () => {
  it.each([
    ['GET', '/api/agents', 'operator'],
    ['GET', '/api/audit', 'operator'],
    ['GET', '/api/audit/verify', 'operator'],
    ['GET', '/api/connections', 'operator'],
    ['GET', '/api/context', 'agent'],
    ['POST', '/api/query', 'agent'],
  ] as const)('answers %s %s (the %s\'s) 503 with Retry-After, naming the store', async (method, url, caller) => {
    const answer = await app.inject({
      method,
      url,
      headers: caller === 'agent' ? { authorization: `Bearer ${key}` } : {},
      ...(method === 'POST' ? { payload: { object: 'home.entity' } } : {}),
    });
    expect({ status: answer.statusCode, retryAfter: answer.headers['retry-after'], body: answer.json() }).toEqual({ status: 503, retryAfter: '5', body: POSTGRES_DOWN });
  });

  it('answers a push the same for a connection that exists and one that does not, revealing neither', async () => {
    const push = (id: string) => app.inject({ method: 'POST', url: `/api/ingest/${id}`, headers: { authorization: 'Bearer pcgis_wrong' }, payload: { data: {} } });
    const [known, unknown] = await Promise.all([push(pushId), push('00000000-0000-4000-8000-000000000000')]);
    expect({ status: known.statusCode, body: known.body, retryAfter: known.headers['retry-after'] }).toEqual({
      status: unknown.statusCode,
      body: unknown.body,
      retryAfter: unknown.headers['retry-after'],
    });
    expect(known.statusCode).toBe(503);
  });
});
