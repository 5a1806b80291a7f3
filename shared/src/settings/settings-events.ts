import { eventChannel, type EventPublisher } from '../redis/index.ts';
import { SETTINGS_EVENTS_CHANNEL, SettingsEventSchema, type SettingsEvent } from './settings-types.ts';

export { SETTINGS_EVENTS_CHANNEL, type SettingsEvent } from './settings-types.ts';

/** `{setting}` on `<REDIS_PREFIX>settings-events`, after a setting's change commits. */
const settingsEvents = eventChannel(SETTINGS_EVENTS_CHANNEL, SettingsEventSchema);

export type SettingsEventPublisher = EventPublisher<SettingsEvent>;
export const settingsEventsChannel = settingsEvents.channel;
export const createSettingsEventPublisher = settingsEvents.publisher;
/** Null for anything that is not a settings event. */
export const parseSettingsEvent = settingsEvents.parse;
