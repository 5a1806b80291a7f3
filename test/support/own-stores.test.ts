import pg from 'pg';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { startOwnPostgres, startOwnRedis, type OwnPostgres, type OwnRedis } from './own-stores.ts';

describe('stores of a test of its own', () => {
  let redis: OwnRedis | undefined;
  let postgres: OwnPostgres | undefined;
  afterAll(async () => {
    await redis?.dispose();
    await postgres?.dispose();
  });

  it('a Redis that stops, refuses, and answers again on the same address', async () => {
    redis = await startOwnRedis();
    const ping = async () => {
      const client = new Redis(redis!.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      client.on('error', () => undefined);
      try {
        await client.connect();
        return await client.ping();
      } catch {
        return 'down';
      } finally {
        client.disconnect();
      }
    };
    expect(await ping()).toBe('PONG');
    await redis.stop();
    expect(await ping()).toBe('down');
    await redis.start();
    expect(await ping()).toBe('PONG');
  });

  it('a migrated Postgres that keeps its rows across a stop and a start', async () => {
    postgres = await startOwnPostgres();
    const count = async () => {
      const client = new pg.Client({ connectionString: postgres!.databaseUrl });
      await client.connect();
      try {
        return (await client.query<{ n: number }>('SELECT count(*)::int AS n FROM agents')).rows[0]?.n;
      } finally {
        await client.end();
      }
    };
    const client = new pg.Client({ connectionString: postgres.databaseUrl });
    await client.connect();
    await client.query("INSERT INTO agents (user_id, name, key_hash, sectors) VALUES (1, 'kept', decode(repeat('ab', 32), 'hex'), '{}')");
    await client.end();
    await postgres.stop();
    await expect(count()).rejects.toThrow();
    await postgres.start();
    expect(await count()).toBe(1);
  });
});
