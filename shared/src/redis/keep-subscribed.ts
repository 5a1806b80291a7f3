import type { Redis } from 'ioredis';

export type KeepSubscribedHandlers = {
  /** Runs once a re-subscription after a reconnect is acknowledged (a check for what the gap missed). */
  onResubscribed?: () => void;
  /** A re-subscription that failed (the connection dropped again before the answer, say). */
  onError: (error: unknown) => void;
};

/**
 * Subscribes to `channel`, and again each time the connection is ready after a reconnect. Subscriber
 * clients run with ioredis's own `autoResubscribe` off (`redisOptions`): it sends that SUBSCRIBE with no
 * rejection handler, so a connection that drops again before the answer became an unhandled rejection,
 * which ends a Node process.
 */
export async function keepSubscribed(subscriber: Redis, channel: string, handlers: KeepSubscribedHandlers): Promise<void> {
  await subscriber.subscribe(channel);
  subscriber.on('ready', () => {
    subscriber.subscribe(channel).then(() => handlers.onResubscribed?.(), handlers.onError);
  });
}
