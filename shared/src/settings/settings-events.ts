import { prefixed, type Redis, type RedisSettings } from '../redis/index.ts';
import { SETTINGS_EVENTS_CHANNEL, SettingsEventSchema, type SettingsEvent } from './settings-types.ts';

export { SETTINGS_EVENTS_CHANNEL, type SettingsEvent } from './settings-types.ts';

/** `<REDIS_PREFIX>settings-events`: ioredis does not prefix channel names, so every side builds it here. */
export function settingsEventsChannel(settings: Pick<RedisSettings, 'REDIS_PREFIX'>): string {
  return prefixed(settings, SETTINGS_EVENTS_CHANNEL);
}

export type SettingsEventPublisher = {
  /** Publishes `{setting}` as JSON; call only after the change committed. */
  publish(event: SettingsEvent): Promise<void>;
};

export function createSettingsEventPublisher(
  redis: Pick<Redis, 'publish'>,
  settings: Pick<RedisSettings, 'REDIS_PREFIX'>,
): SettingsEventPublisher {
  const channel = settingsEventsChannel(settings);
  return {
    async publish(event) {
      await redis.publish(channel, JSON.stringify(SettingsEventSchema.parse(event)));
    },
  };
}

/** Reads a message from the channel; null for anything that is not a settings event. */
export function parseSettingsEvent(message: string): SettingsEvent | null {
  try {
    const parsed = SettingsEventSchema.safeParse(JSON.parse(message));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}
