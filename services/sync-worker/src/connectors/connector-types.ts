import type { ActionDef, ActionResult, LiveFetchResult } from '@pcg/shared/live';
import type { Logger } from '@pcg/shared/logger';
import type { ProviderDescriptor } from '@pcg/shared/providers';

/** The connection a connector works for; the row fixes user, sector and tables. */
export type ConnectionInfo = {
  id: string;
  provider: string;
  sector: string;
  displayName: string;
};

/**
 * The cache as a connector may touch it: through the one upsert path (`@pcg/shared/cache`), scoped to
 * its own connection and provider, so a connector can never write another connection's rows.
 */
export type CacheWriter = {
  upsert(object: string, records: readonly unknown[]): Promise<number>;
  /** Source ids this connection holds for an object (to find what vanished at the source). */
  sourceIds(object: string): Promise<string[]>;
  remove(object: string, sourceIds: readonly string[]): Promise<number>;
};

export type ConnectorContext = {
  connection: ConnectionInfo;
  /** Opened credentials, as the Console sealed them; the connector parses them with its schema. */
  credentials: unknown;
  /** Connector-private state kept on the connection (`sync_cursor`); null before the first sync. */
  cursor: unknown;
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
