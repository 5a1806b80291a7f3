import { useTestEnvironment } from '@pcg/testkit/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createRedis, type Redis } from '../redis/index.ts';
import { readRedisPart } from './dependency-probe.ts';


const testEnv = useTestEnvironment();
let client: Redis | undefined;
afterEach(() => client?.disconnect());

describe('a status read that needs Redis', () => {
  it('waits for a client that is still connecting, as one is right after a process starts', async () => {
    client = createRedis({ REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: testEnv.redisPrefix }, 'commands', 'status-probe-test');
    expect(client.status).not.toBe('ready');
    expect(await readRedisPart(client, () => client!.ping())).toEqual({ ok: true, value: 'PONG' });
  });

  it('says Redis is down for a client that cannot connect, within about a second', async () => {
    client = createRedis({ REDIS_URL: 'redis://127.0.0.1:1', REDIS_PREFIX: testEnv.redisPrefix }, 'commands', 'status-probe-test');
    client.on('error', () => undefined);
    expect(await readRedisPart(client, () => client!.ping())).toEqual({ ok: false, down: 'redis' });
  });
});
