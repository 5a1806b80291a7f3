import type { ProviderDescriptor } from './provider-types.ts';

/** The phone health app (Health Auto Export) pushing its REST API automation to the gateway. */
export const HEALTH_AUTO_EXPORT: ProviderDescriptor = {
  kind: 'health-auto-export',
  displayName: 'Phone health app (Health Auto Export)',
  sectors: ['health'],
  objects: ['health.sample', 'health.workout', 'health.sleep_session'],
  signIn: 'push',
  defaultSyncIntervalMinutes: null,
};
