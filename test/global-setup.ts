import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { runMigrations } from '@pcg/shared/db';
import {
  freePort,
  probePostgres,
  probeRedis,
  redisServerOnPath,
  startEmbeddedPostgres,
  startRedisServer,
  withDatabase,
} from '../scripts/local-services/index.ts';

/**
 * Finds a Postgres server and a Redis for the whole run (TEST_DATABASE_URL / TEST_REDIS_URL, else the
 * local defaults, else an embedded Postgres and a redis-server child), and migrates one template
 * database that every test file clones.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const stops: Array<() => Promise<void>> = [];
  const serverUrl = await findPostgres(stops);
  const redisUrl = await findRedis(stops);

  const template = `pcg_tpl_${process.pid}_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(template)}`);
  await runMigrations(withDatabase(serverUrl, template));

  project.provide('pgServerUrl', serverUrl);
  project.provide('templateDatabase', template);
  project.provide('redisUrl', redisUrl);

  return async () => {
    await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(template)} WITH (FORCE)`);
    await admin.end();
    for (const stop of stops.reverse()) await stop();
  };
}

async function findPostgres(stops: Array<() => Promise<void>>): Promise<string> {
  const configured = process.env.TEST_DATABASE_URL ?? 'postgres://postgres:postgres@127.0.0.1:5432/postgres';
  const probe = await probePostgres(configured);
  if (probe.ok) return configured;
  if (process.env.TEST_DATABASE_URL || probe.reachable) {
    throw new Error(`the test Postgres at ${configured} refused: ${probe.message}; set TEST_DATABASE_URL`);
  }
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'pcg-test-pg-'));
  const server = await startEmbeddedPostgres({ dataDir: path.join(dataDir, 'pg'), port: await freePort(), persistent: false });
  stops.push(async () => {
    await server.stop();
    await rm(dataDir, { recursive: true, force: true });
  });
  return server.url;
}

async function findRedis(stops: Array<() => Promise<void>>): Promise<string> {
  const configured = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
  const probe = await probeRedis(configured);
  if (probe.ok) return configured;
  if (process.env.TEST_REDIS_URL || !redisServerOnPath()) {
    throw new Error(`no Redis answers at ${configured} (${probe.message}); start one, set TEST_REDIS_URL, or install redis-server`);
  }
  const server = await startRedisServer({ port: await freePort() });
  stops.push(server.stop);
  return server.url;
}

declare module 'vitest' {
  export interface ProvidedContext {
    pgServerUrl: string;
    templateDatabase: string;
    redisUrl: string;
  }
}
