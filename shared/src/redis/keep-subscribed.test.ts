import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@pcg/testkit/testing';
import { startOwnRedis, type OwnRedis } from '../../../test/support/own-stores.ts';
import { createRedis } from './create-redis.ts';
import { keepSubscribed } from './keep-subscribed.ts';

const SETTINGS = { REDIS_PREFIX: 'keep:' };
let redis: OwnRedis;

beforeAll(async () => {
  redis = await startOwnRedis();
});
afterAll(async () => {
  await redis?.dispose();
});

describe('a subscription kept across Redis restarts', () => {
  it("leaves ioredis's own re-subscription off, whose SUBSCRIBE has no rejection handler", () => {
    const subscriber = createRedis({ REDIS_URL: redis.url, ...SETTINGS }, 'subscriber');
    try {
      expect(subscriber.options.autoResubscribe).toBe(false);
    } finally {
      subscriber.disconnect();
    }
  });

  it('subscribes again once Redis is back, says so, and receives what is published after', async () => {
    const subscriber = createRedis({ REDIS_URL: redis.url, ...SETTINGS }, 'subscriber');
    const publisher = createRedis({ REDIS_URL: redis.url, ...SETTINGS }, 'commands');
    subscriber.on('error', () => undefined);
    publisher.on('error', () => undefined);
    const received: string[] = [];
    const errors: unknown[] = [];
    let resubscribed = 0;
    subscriber.on('message', (_channel: string, message: string) => received.push(message));
    try {
      await keepSubscribed(subscriber, 'keep:channel', { onResubscribed: () => (resubscribed += 1), onError: (error) => errors.push(error) });
      await publisher.publish('keep:channel', 'before');
      await waitFor(() => (received.includes('before') ? true : undefined), 5_000, 'the first message');
      await redis.stop();
      await redis.start();
      await waitFor(() => (resubscribed > 0 ? true : undefined), 10_000, 'the re-subscription');
      await publisher.publish('keep:channel', 'after');
      await waitFor(() => (received.includes('after') ? true : undefined), 5_000, 'a message after the restart');
      expect(errors).toEqual([]);
    } finally {
      subscriber.disconnect();
      publisher.disconnect();
    }
  });
});
