import type { DatabasePool } from 'slonik';
import { DomainError } from '../errors/index.ts';
import type { LiveRequester } from '../live/index.ts';
import { findProvider } from '../providers/index.ts';
import { fitRows, PAGE_BUDGET_CHARS } from '../query/index.ts';
import type { ObjectDef } from '../sectors/index.ts';
import { dataAgeSeconds } from '../connections/index.ts';
import { noActiveConnection, UpstreamError, ValidationError } from './reads-errors.ts';
import { activeConnections, type ActiveConnection } from './reads-queries.ts';

/** What happened at one connection: its rows, its own error, or why it was not asked. */
export type LiveConnectionReport =
  | { connection_id: string; provider: string; status: 'answered'; row_count: number }
  | { connection_id: string; provider: string; status: 'failed'; error: string }
  | { connection_id: string; provider: string; status: 'skipped'; reason: string };

export type FetchLiveResult = {
  object: string;
  rows: Array<Record<string, unknown>>;
  live: true;
  connections: LiveConnectionReport[];
  cut_for_size?: true;
  notice?: string;
};

export const LIVE_CUT_NOTICE = `the live rows were cut at ${PAGE_BUDGET_CHARS} characters; narrow them with where, id or connection_id`;

export const LIVE_REASONS = {
  pushed: (name: string) => `${name} pushes its data to the gateway, so there is no source to ask`,
  noConnector: (provider: string) =>
    `no connector for provider '${provider}' runs in this gateway (its rows were stored another way, such as the demo seed), so there is no source to ask`,
  otherObject: (name: string, object: string) => `${name} does not serve ${object}`,
  notLive: (name: string, object: string) => `${name} is not read live by this gateway: its connector stores ${object} on a schedule and cannot ask the source on demand`,
} as const;

/** Why a connection of this provider cannot be read live for the object, or null when it can (its descriptor's liveObjects). */
export function whyNotLive(provider: string, object: string): string | null {
  const descriptor = findProvider(provider);
  if (!descriptor) return LIVE_REASONS.noConnector(provider);
  if (descriptor.signIn === 'push') return LIVE_REASONS.pushed(descriptor.displayName);
  if (!descriptor.objects.includes(object)) return LIVE_REASONS.otherObject(descriptor.displayName, object);
  if (!(descriptor.liveObjects?.includes(object) ?? false)) return LIVE_REASONS.notLive(descriptor.displayName, object);
  return null;
}

/** Each connection's data age as describe_context gives it, for a refusal that sends the agent to the cache. */
function dataAges(connections: readonly ActiveConnection[], at: Date): string {
  return connections
    .map((connection) => {
      const age = dataAgeSeconds(connection, at);
      return `${connection.display_name} ${age === null ? 'never synced' : `${age} s old`}`;
    })
    .join(', ');
}

/**
 * fetch_live where no connection asked for can be read live: a tool error that says why, per
 * connection, and what to do instead (query the cache, whose data age it gives).
 */
export function notReadableLive(object: string, skipped: ReadonlyArray<{ connection: ActiveConnection; reason: string }>, at: Date, named?: string): ValidationError {
  const why = skipped.map(({ connection, reason }) => `${connection.display_name} (${connection.provider}): ${reason}`).join('; ');
  const from = named === undefined ? 'from any active connection' : `from connection ${named}`;
  const ages = dataAges(skipped.map(({ connection }) => connection), at);
  return new ValidationError(`${object} cannot be read live ${from}: ${why}. Query the cache instead: query {"object": "${object}"} reads the stored rows; data age: ${ages} (data_age_seconds in describe_context).`);
}

export const unknownLiveConnection = (id: string, sector: string, known: readonly string[]) =>
  new ValidationError(`connection_id: '${id}' is no active ${sector} connection; describe_context lists them (active here: ${known.join(', ') || 'none'})`);

const safeMessage = (error: unknown) => (error instanceof DomainError ? error.message : 'the live request failed');

export type LiveReadRequest = { object: ObjectDef; id?: string; where?: Array<{ field: string; op: string; value?: unknown }>; connectionId?: string; now: Date };

/**
 * fetch_live over the connections of a sector: each live-capable connection is asked (at once), and the
 * answer holds each one's rows or its own error, never one failure for all; a connection that cannot be
 * read live is skipped with its reason. When none asked for can be read live, the call is a tool error
 * that sends the agent to the cache. Naming a connection asks only it, and its failure is the call's.
 */
export async function fetchLiveRows(db: DatabasePool, live: LiveRequester | undefined, request: LiveReadRequest): Promise<FetchLiveResult> {
  const { object } = request;
  const active = await activeConnections(db, object.sector);
  // Spec 7 comes first, unchanged: no active connection at all.
  if (active.length === 0) throw noActiveConnection(object.sector);
  const chosen = request.connectionId === undefined ? active : active.filter((connection) => connection.id === request.connectionId);
  if (chosen.length === 0) throw unknownLiveConnection(request.connectionId ?? '', object.sector, active.map((connection) => connection.id));

  const reports: LiveConnectionReport[] = [];
  const skipped: Array<{ connection: ActiveConnection; reason: string }> = [];
  const askable = chosen.filter((connection) => {
    const reason = whyNotLive(connection.provider, object.name);
    if (reason) {
      reports.push({ connection_id: connection.id, provider: connection.provider, status: 'skipped', reason });
      skipped.push({ connection, reason });
    }
    return reason === null;
  });
  if (askable.length === 0) throw notReadableLive(object.name, skipped, request.now, request.connectionId);
  if (!live) throw new UpstreamError('live reads are not available: the sync-worker is not connected');

  const answers = await Promise.allSettled(
    askable.map((connection) => live.fetchLive({ connectionId: connection.id, object: object.name, id: request.id, where: request.where })),
  );
  const rows: Array<Record<string, unknown>> = [];
  for (const [i, answer] of answers.entries()) {
    const { id, provider } = askable[i] as (typeof askable)[number];
    if (answer.status === 'fulfilled') {
      rows.push(...answer.value.rows.map((row) => ({ connection_id: id, ...row })));
      reports.push({ connection_id: id, provider, status: 'answered', row_count: answer.value.rows.length });
    } else {
      // One connection named by the agent: its failure is the call's, as a tool error with its message.
      if (request.connectionId !== undefined) throw answer.reason;
      reports.push({ connection_id: id, provider, status: 'failed', error: safeMessage(answer.reason) });
    }
  }
  const order = new Map(chosen.map((connection, i) => [connection.id, i]));
  reports.sort((a, b) => (order.get(a.connection_id) ?? 0) - (order.get(b.connection_id) ?? 0));
  const page = fitRows(rows, (row) => row);
  const result: FetchLiveResult = { object: object.name, rows: page.rows, live: true, connections: reports };
  if (page.cutForSize) Object.assign(result, { cut_for_size: true, notice: LIVE_CUT_NOTICE });
  return result;
}
