import type { RefreshCredentials } from '../connectors/connector-types.ts';
import { noTokenRefresh } from '../run/connector-context.ts';
import { OAuthCredentialsSchema } from './oauth-client.ts';
import { GrantLostError, type TokenRefresher } from './token-refresh.ts';

/**
 * The connector context's refresh hook, answered by the sign-ins' one refresher: the connection's
 * sign-in is refreshed (once, under its lock), with the access token the source just refused, so a
 * token another connection already replaced is reused rather than refreshed twice. A grant that is
 * gone is answered `refused`; every other failure (rate limited with its `Retry-After`, unavailable,
 * application credentials refused) is thrown as the refresher's own source error, which keeps what the
 * failure mapper needs to know.
 */
export function refreshThroughSignIns(refresher: Pick<TokenRefresher, 'refreshAccessToken'>): RefreshCredentials {
  return async (connection, current) => {
    if (!connection.signInId) return noTokenRefresh(connection, current);
    const rejected = OAuthCredentialsSchema.safeParse(current).data?.accessToken;
    try {
      return { ok: true, credentials: await refresher.refreshAccessToken(connection.signInId, { rejected }) };
    } catch (error) {
      if (error instanceof GrantLostError) return { ok: false, reason: 'refused', message: error.message };
      throw error;
    }
  };
}
