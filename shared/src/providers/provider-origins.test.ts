import { describe, expect, it } from 'vitest';
import { MICROSOFT, MICROSOFT_GRAPH_API_BASE } from './microsoft.ts';
import { createOriginRebaser, providerOriginsConfig } from './provider-origins.ts';

const STAND_IN = 'http://127.0.0.1:18124';

describe('Microsoft stand-ins go through the origin rebaser like every other provider', () => {
  it('reads MICROSOFT_LOGIN_BASE_URL and MICROSOFT_GRAPH_BASE_URL as origins and refuses a path', () => {
    expect(providerOriginsConfig.parse({ MICROSOFT_LOGIN_BASE_URL: `${STAND_IN}/`, MICROSOFT_GRAPH_BASE_URL: STAND_IN })).toEqual({
      MICROSOFT_LOGIN_BASE_URL: STAND_IN,
      MICROSOFT_GRAPH_BASE_URL: STAND_IN,
    });
    expect(providerOriginsConfig.safeParse({ MICROSOFT_LOGIN_BASE_URL: `${STAND_IN}/common` }).success).toBe(false);
    expect(providerOriginsConfig.safeParse({ MICROSOFT_GRAPH_BASE_URL: `${STAND_IN}/v1.0` }).success).toBe(false);
    expect(providerOriginsConfig.safeParse({ MICROSOFT_GRAPH_BASE_URL: 'ftp://127.0.0.1' }).success).toBe(false);
  });

  it('maps the identity platform and Graph onto their own settings, paths kept', () => {
    const rebase = createOriginRebaser({ MICROSOFT_LOGIN_BASE_URL: 'http://127.0.0.1:1', MICROSOFT_GRAPH_BASE_URL: 'http://127.0.0.1:2' });
    expect(rebase(MICROSOFT.oauth?.authorizeUrl ?? '')).toBe('http://127.0.0.1:1/common/oauth2/v2.0/authorize');
    expect(rebase(MICROSOFT.oauth?.tokenUrl ?? '')).toBe('http://127.0.0.1:1/common/oauth2/v2.0/token');
    expect(rebase(`${MICROSOFT_GRAPH_API_BASE}/me`)).toBe('http://127.0.0.1:2/v1.0/me');
    expect(rebase(MICROSOFT_GRAPH_API_BASE)).toBe('http://127.0.0.1:2/v1.0');
  });

  it('leaves Microsoft at its real hosts when unset, and other clouds untouched when set', () => {
    expect(createOriginRebaser({})(MICROSOFT.oauth?.tokenUrl ?? '')).toBe('https://login.microsoftonline.com/common/oauth2/v2.0/token');
    const rebase = createOriginRebaser({ MICROSOFT_LOGIN_BASE_URL: STAND_IN, MICROSOFT_GRAPH_BASE_URL: STAND_IN });
    expect(rebase('https://graph.microsoft.us/v1.0/me')).toBe('https://graph.microsoft.us/v1.0/me');
    expect(rebase('https://oauth2.googleapis.com/token')).toBe('https://oauth2.googleapis.com/token');
  });
});
