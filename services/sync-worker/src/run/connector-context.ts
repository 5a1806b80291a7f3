import { openCredentials } from '@pcg/shared/crypto';
import type { Logger } from '@pcg/shared/logger';
import type { ConnectionInfo, ConnectorContext, RefreshCredentials } from '../connectors/connector-types.ts';
import { SourceAuthError, SourceUnavailableError } from '../connectors/kit/source-errors.ts';
import type { ConnectionRow, ConnectionStore } from '../sync/connection-store.ts';

export type ContextDeps = {
  store: Pick<ConnectionStore, 'cacheWriter'>;
  credentialsKey: Buffer;
  /** Token refresh of the connection's sign-in; default: refused (no provider of today refreshes). */
  refreshCredentials?: RefreshCredentials;
};

/** Used when no refresher is wired: a token that expired cannot be renewed, so a new sign-in is needed. */
export const noTokenRefresh: RefreshCredentials = async () => ({ ok: false, reason: 'refused', message: 'this connection has no token to refresh' });

export function connectionInfo(row: Pick<ConnectionRow, 'id' | 'provider' | 'sector' | 'display_name' | 'sign_in_id'>): ConnectionInfo {
  return { id: row.id, provider: row.provider, sector: row.sector, displayName: row.display_name, signInId: row.sign_in_id };
}

/**
 * The one way a runner (sync or live) builds what a connector sees: the connection, its opened
 * credentials, its cursor, the cache scoped to it, the abort signal and the refresh hook. Opening the
 * credentials may throw `CredentialsCipherError`, which the failure mapper reads as needs sign-in.
 */
export function buildConnectorContext(
  deps: ContextDeps,
  row: ConnectionRow,
  options: { signal: AbortSignal; requestTimeoutMs: number; log: Logger; saveProgress?: (cursor: unknown) => Promise<void> },
) {
  const connection = connectionInfo(row);
  const refresh = deps.refreshCredentials ?? noTokenRefresh;
  const cache = deps.store.cacheWriter(row);
  const context = {
    connection,
    credentials: row.credentials ? openCredentials(deps.credentialsKey, row.credentials, row.credentials_context) : null,
    cursor: row.sync_cursor ?? null,
    ...(options.saveProgress ? { saveProgress: options.saveProgress } : {}),
    signal: options.signal,
    requestTimeoutMs: options.requestTimeoutMs,
    cache,
    log: options.log,
    async refreshToken(): Promise<void> {
      const result = await refresh(connection, context.credentials);
      if (result.ok) {
        context.credentials = result.credentials;
        return;
      }
      if (result.reason === 'refused') throw new SourceAuthError(`the token refresh was refused (${result.message})`);
      throw new SourceUnavailableError(`the token could not be refreshed (${result.message})`);
    },
  } satisfies ConnectorContext;
  return context;
}
