import type { Sector } from '../sectors/index.ts';
import type { ProviderDescriptor } from './provider-types.ts';

/** WHOOP's one origin: sign-in, token and API (reference §3.1). `WHOOP_BASE_URL` replaces it. */
export const WHOOP_ORIGIN = 'https://api.prod.whoop.com';
export const WHOOP_API_BASE = `${WHOOP_ORIGIN}/developer`;

/** Spec 2.5: each of these three maps to `health`; `read:cycles`, `read:profile` and `offline` map to no sector. */
export const WHOOP_HEALTH_SCOPES = ['read:recovery', 'read:sleep', 'read:workout'] as const;

/**
 * A WHOOP-style wearable (reference §3): recovery, sleep and workouts into the health objects. Asks for
 * the three health scopes, `read:profile` (the only way the API names the account) and `offline` (the
 * only way to get a refresh token). Refresh tokens rotate: the refresher stores each new one.
 */
export const WHOOP: ProviderDescriptor = {
  kind: 'whoop',
  displayName: 'WHOOP',
  sectors: ['health'],
  objects: ['health.sample', 'health.sleep_session', 'health.workout'],
  signIn: 'oauth',
  defaultSyncIntervalMinutes: 60,
  oauth: {
    authorizeUrl: `${WHOOP_ORIGIN}/oauth/oauth2/auth`,
    tokenUrl: `${WHOOP_ORIGIN}/oauth/oauth2/token`,
    scopes: ['offline', ...WHOOP_HEALTH_SCOPES, 'read:profile'],
    pkce: false,
    refreshParams: { scope: 'offline' },
    sectorsOf: (granted): Sector[] => (WHOOP_HEALTH_SCOPES.some((scope) => granted.includes(scope)) ? ['health'] : []),
    account: { url: `${WHOOP_API_BASE}/v2/user/profile/basic`, field: 'user_id' },
  },
};
