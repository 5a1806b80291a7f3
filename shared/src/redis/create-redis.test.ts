import { describe, expect, it } from 'vitest';
import { createRedis, bullmqPrefix, prefixed } from './create-redis.ts';
import { useTestEnvironment } from '@pcg/testkit/testing';

const testEnv = useTestEnvironment();

describe('redis factory', () => {
  it('stores every key of a commands client under REDIS_PREFIX', async () => {
    await testEnv.redis.set('probe', 'value');
    const raw = createRedis({ REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: '' }, 'commands');
    try {
      expect(await raw.get(`${testEnv.redisPrefix}probe`)).toBe('value');
      expect(await raw.exists('probe')).toBe(0);
    } finally {
      await raw.quit();
    }
  });

  it('builds channel names and the BullMQ prefix from REDIS_PREFIX', () => {
    expect(prefixed({ REDIS_PREFIX: 'pcg:' }, 'agent-events')).toBe('pcg:agent-events');
    expect(bullmqPrefix({ REDIS_PREFIX: 'pcg:' })).toBe('pcg:bull');
  });

  it('gives BullMQ clients no keyPrefix (BullMQ refuses one) and unlimited retries', () => {
    const client = createRedis({ REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: 'pcg:' }, 'bullmq');
    try {
      expect(client.options.keyPrefix).toBeFalsy();
      expect(client.options.maxRetriesPerRequest).toBeNull();
    } finally {
      client.disconnect();
    }
  });
});
