import type { z } from 'zod';
import { prefixed, type Redis, type RedisSettings } from './create-redis.ts';

export type EventPublisher<E> = {
  /** Publishes the event as JSON, checked by its schema; call only after the change committed (design 4.7). */
  publish(event: E): Promise<void>;
};

/** A kind of event told to other processes over one Redis channel, each message one event as JSON. */
export type EventChannel<E> = {
  /** `<REDIS_PREFIX><name>`: ioredis does not prefix channel names, so every side builds it here. */
  channel(settings: Pick<RedisSettings, 'REDIS_PREFIX'>): string;
  publisher(redis: Pick<Redis, 'publish'>, settings: Pick<RedisSettings, 'REDIS_PREFIX'>): EventPublisher<E>;
  /** Reads a message from the channel; null for anything that is not such an event. */
  parse(message: string): E | null;
};

export function eventChannel<E>(name: string, schema: z.ZodType<E>): EventChannel<E> {
  const channel = (settings: Pick<RedisSettings, 'REDIS_PREFIX'>) => prefixed(settings, name);
  return {
    channel,
    publisher(redis, settings) {
      const to = channel(settings);
      return {
        async publish(event) {
          await redis.publish(to, JSON.stringify(schema.parse(event)));
        },
      };
    },
    parse(message) {
      try {
        const parsed = schema.safeParse(JSON.parse(message));
        return parsed.success ? parsed.data : null;
      } catch {
        return null;
      }
    },
  };
}
