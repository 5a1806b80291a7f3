import type { DatabasePool } from 'slonik';
import { HttpError } from '../http/index.ts';
import type { LiveRequester } from '../live/index.ts';
import { findProvider } from '../providers/index.ts';
import { fitRows, PAGE_BUDGET_CHARS } from '../query/index.ts';
import type { ObjectDef } from '../sectors/index.ts';
import { noActiveConnection, pushedOnly, UpstreamError, ValidationError } from './reads-errors.ts';
import { activeConnections } from './reads-queries.ts';

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
  pushed: (name: string) => `${name} pushes its data to the gateway, so there is no source to ask; use query`,
  noConnector: (provider: string) =>
    `no connector for provider '${provider}' runs in this gateway (its rows were stored another way, such as the demo seed), so there is no source to ask; use query`,
  otherObject: (name: string, object: string) => `${name} does not serve ${object}`,
} as const;

/** Why a connection of this provider cannot be read live for the object, or null when it can. */
export function whyNotLive(provider: string, object: string): string | null {
  const descriptor = findProvider(provider);
  if (!descriptor) return LIVE_REASONS.noConnector(provider);
  if (descriptor.signIn === 'push') return LIVE_REASONS.pushed(descriptor.displayName);
  if (!descriptor.objects.includes(object)) return LIVE_REASONS.otherObject(descriptor.displayName, object);
  return null;
}

export const unknownLiveConnection = (id: string, sector: string, known: readonly string[]) =>
  new ValidationError(`connection_id: '${id}' is no active ${sector} connection; describe_context lists them (active here: ${known.join(', ') || 'none'})`);

const safeMessage = (error: unknown) => (error instanceof HttpError ? error.message : 'the live request failed');

export type LiveReadRequest = { object: ObjectDef; id?: string; where?: Array<{ field: string; op: string; value?: unknown }>; connectionId?: string };

/**
 * fetch_live over the connections of a sector: each live-capable connection is asked (at once), and the
 * answer holds each one's rows or its own error, never one failure for all; a connection that cannot be
 * read live is skipped with its reason. Naming a connection asks only it, and its failure is the call's.
 */
export async function fetchLiveRows(db: DatabasePool, live: LiveRequester | undefined, request: LiveReadRequest): Promise<FetchLiveResult> {
  const { object } = request;
  const active = await activeConnections(db, object.sector);
  if (active.length === 0) throw noActiveConnection(object.sector);
  const chosen = request.connectionId === undefined ? active : active.filter((connection) => connection.id === request.connectionId);
  if (chosen.length === 0) throw unknownLiveConnection(request.connectionId ?? '', object.sector, active.map((connection) => connection.id));

  const reports: LiveConnectionReport[] = [];
  const askable = chosen.filter(({ id, provider }) => {
    const reason = whyNotLive(provider, object.name);
    if (reason) reports.push({ connection_id: id, provider, status: 'skipped', reason });
    return reason === null;
  });
  if (askable.length === 0) {
    if (request.connectionId !== undefined) throw new ValidationError(`${object.name} cannot be read live from connection ${request.connectionId}: ${(reports[0] as { reason: string }).reason}`);
    if (chosen.every(({ provider }) => findProvider(provider)?.signIn === 'push')) throw pushedOnly(object.name);
    const reasons = reports.map((report) => `${report.connection_id} (${report.provider}): ${(report as { reason: string }).reason}`).join('; ');
    throw new ValidationError(`${object.name} cannot be read live from any connection: ${reasons}`);
  }
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
