import type { ActionDef, ActionResult, LiveFetchResult } from '@pcg/shared/live';
import type { Logger } from '@pcg/shared/logger';
import type { ProviderDescriptor } from '@pcg/shared/providers';

/** The connection a connector works for; the row fixes user, sector and tables. */
export type ConnectionInfo = {
  id: string;
  provider: string;
  sector: string;
  displayName: string;
  /** The sign-in whose grant the connection reads with; null for push connections. */
  signInId: string | null;
};

/**
 * The cache as a connector may touch it: through the one upsert path (`@pcg/shared/cache`), scoped to
 * its own connection and provider, so a connector can never write another connection's rows.
 */
export type CacheWriter = {
  upsert(object: string, records: readonly unknown[]): Promise<number>;
  /**
   * Source ids this connection holds for an object (to find what vanished at the source); with `since`,
   * only rows whose date or time field is null or at or after `from` (what a windowed source re-sent).
   */
  sourceIds(object: string, since?: { field: string; from: string }): Promise<string[]>;
  /** The gateway ids of this connection's records, by source id (a transaction names its account's gateway id). */
  idsOf(object: string, sourceIds: readonly string[]): Promise<Map<string, string>>;
  remove(object: string, sourceIds: readonly string[]): Promise<number>;
};

/**
 * What refreshing a sign-in's access token came to. `refused` (OAuth `invalid_grant`, no refresh possible)
 * means a new sign-in is needed; `unavailable` (the token endpoint did not answer) means try again later.
 */
export type TokenRefreshResult =
  | { ok: true; credentials: unknown }
  | { ok: false; reason: 'refused' | 'unavailable'; message: string };

/**
 * Refreshes the access token of the sign-in behind a connection (`current`: the credentials the source
 * just refused): one refresh per sign-in at a time, the rotated tokens written back sealed, the opened
 * credentials returned. Supplied by the connections home
 * (`refreshAccessToken(signInId)`, the sign-in looked up from the connection); injected so the runners
 * never hold that logic. Without one, every refresh is refused (the hub's token cannot be refreshed).
 */
export type RefreshCredentials = (connection: ConnectionInfo, current: unknown) => Promise<TokenRefreshResult>;

export type ConnectorContext = {
  connection: ConnectionInfo;
  /** Opened credentials, as the Console sealed them (replaced by `refreshToken()`); the connector parses them with its schema. */
  credentials: unknown;
  /**
   * Refreshes the access token and replaces `credentials`. The runners call it (once) when an operation
   * fails with `SourceTokenExpiredError`, then run the operation once more; a connector rarely needs it.
   * Throws `SourceAuthError` when the refresh is refused, `SourceUnavailableError` when it could not run.
   */
  refreshToken(): Promise<void>;
  /** Connector-private state kept on the connection (`sync_cursor`); null before the first sync. */
  cursor: unknown;
  /**
   * Stores `cursor` on the connection now, before the sync ends: progress the next attempt resumes from
   * (Gmail's full sync cut short by a rate limit). The sync's own cursor replaces it. Syncs only.
   */
  saveProgress?(cursor: unknown): Promise<void>;
  /** Aborted on shutdown (sync) or at the caller's deadline (live). */
  signal: AbortSignal;
  /** Timeout of one request to the source, in milliseconds. */
  requestTimeoutMs: number;
  cache: CacheWriter;
  log: Logger;
};

export type SyncOutcome = {
  mode: 'full' | 'incremental';
  /** Stored on the connection only when the whole sync succeeded; the next sync starts from it. */
  cursor: unknown;
  /** The source's action catalogue, when this sync read it (stored on the connection for list_actions). */
  actions?: ActionDef[];
  /**
   * What the source reported going wrong although the sync itself succeeded (a bank at the bridge that
   * did not answer): kept as the connection's last error, so its health shows it. Written by the gateway
   * or escaped, never raw HTML from a source.
   */
  notice?: string;
  /** The IANA zone the source is set to (the hub's own), the default of the person's time zone (`canonicalTimeZone`-checked). */
  timeZone?: string;
  /** The connector chose not to ask the source this time (a quota it must keep), and says why; nothing is recorded as synced. */
  notRun?: string;
};

export type LiveFetchInput = {
  object: string;
  /** A source id (the runner has already turned a gateway id into one). */
  id?: string;
  where?: Array<{ field: string; op: string; value?: unknown }>;
};

/**
 * One provider's behaviour (the descriptor in `@pcg/shared/providers` says what it is):
 * - `sync`: incremental when the cursor allows, full otherwise; absent for push providers.
 * - `fetchLive`: the one read that goes to the source; absent when the source cannot be read live.
 * - `invokeAction`: performs one action, once; a source's own rejection is `{ ok: false, error }`.
 * - `actions`: a fixed list (empty for every read-only provider), or `discovered` during sync.
 */
export type Connector = {
  provider: ProviderDescriptor;
  actions: readonly ActionDef[] | 'discovered';
  sync?(context: ConnectorContext): Promise<SyncOutcome>;
  fetchLive?(context: ConnectorContext, input: LiveFetchInput): Promise<LiveFetchResult>;
  invokeAction?(context: ConnectorContext, input: { name: string; arguments: Record<string, unknown> }): Promise<ActionResult>;
};
