import type { DatabasePool } from 'slonik';
import type { Logger } from '@pcg/shared/logger';
import { createRedis, keepSubscribed, type RedisSettings } from '@pcg/shared/redis';
import { createSettingsQueries, parseSettingsEvent, settingsEventsChannel } from '@pcg/shared/settings';
import { bridgeEndpoints, type BridgeEndpoints } from './bridge-endpoints.ts';

export type BridgeSwitch = {
  /** The bridge's public URLs while a public origin is saved; null while the bridge is off. */
  current(): BridgeEndpoints | null;
  /** Reads the saved origin again; resolves once the switch shows it. */
  reload(): Promise<void>;
  close(): Promise<void>;
};

/**
 * Turns the bridge on and off in a running gateway (issue: no restart). The saved public origin is read
 * from Postgres at start, again on every `settings-events` message, and again after every Redis
 * reconnect, so a message missed while Redis was away never leaves the bridge in its old state.
 */
export async function openBridgeSwitch(deps: { db: DatabasePool; settings: RedisSettings; log: Logger }): Promise<BridgeSwitch> {
  const queries = createSettingsQueries(deps.db);
  let endpoints: BridgeEndpoints | null = null;

  async function reload(): Promise<void> {
    const origin = await queries.readPublicOrigin();
    if (origin === (endpoints?.origin ?? null)) return;
    endpoints = origin === null ? null : bridgeEndpoints(origin);
    deps.log.info({ publicOrigin: origin }, origin === null ? 'oauth bridge off' : 'oauth bridge on');
  }
  const reloadLogged = () => reload().catch((error: unknown) => deps.log.error({ err: error }, 'reading the public origin failed'));

  const subscriber = createRedis(deps.settings, 'subscriber', 'gateway-settings-events');
  subscriber.on('error', (error: Error) => deps.log.warn({ err: error }, 'settings events connection error'));
  subscriber.on('message', (_channel: string, message: string) => {
    if (parseSettingsEvent(message)) void reloadLogged();
    else deps.log.warn('ignored a malformed settings event');
  });
  // Subscribed before the first read, so a change saved in between is not missed.
  try {
    // After a reconnect, read again once subscribed: a change saved while Redis was away was announced to no one.
    await keepSubscribed(subscriber, settingsEventsChannel(deps.settings), {
      onResubscribed: () => void reloadLogged(),
      onError: (error) => deps.log.warn({ err: error }, 'settings events subscription failed'),
    });
    await reload();
  } catch (error) {
    subscriber.disconnect();
    throw error;
  }

  return {
    current: () => endpoints,
    reload,
    async close() {
      await subscriber.quit().catch(() => subscriber.disconnect());
    },
  };
}
