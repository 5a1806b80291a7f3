import { randomUUID } from 'node:crypto';
import type { DatabasePool } from '@pcg/shared/db';
import { takeAuditBatch, type AuditAnchor, type ChainHead } from '@pcg/shared/audit';
import { createConnectionQueries, type ConnectionStatus } from '@pcg/shared/connections';
import { createAgentService } from '@pcg/shared/grants';
import { createLogger } from '@pcg/shared/logger';
import type { Redis } from '@pcg/shared/redis';
import { findObject, type ObjectDef, type Sector } from '@pcg/shared/sectors';
import { waitFor } from './test-environment.ts';

/** The message of the `kind` of error `attempt` throws; the test fails if it throws nothing or another kind. */
export function thrownMessage(attempt: () => unknown, kind: abstract new (...args: never[]) => Error): string {
  try {
    attempt();
  } catch (error) {
    if (!(error instanceof kind)) throw new Error(`threw ${String(error)}, not a ${kind.name}`, { cause: error });
    return error.message;
  }
  throw new Error(`threw no ${kind.name}`);
}

/** An anchor of the chain's head as the audit-writer writes one now (it names its chain and key), written at `writtenAt`. */
export function anchorOfHead(head: ChainHead, keyId: string, writtenAt: string): AuditAnchor {
  return {
    rows: head.seq,
    id: head.id,
    hash: head.hash,
    createdAt: head.createdAt,
    writtenAt,
    chainId: head.chainId,
    firstHash: head.firstHash,
    keyId,
    firstKeyedRow: 1,
    databaseSystemId: null,
  };
}

/** The catalogue's object of that name; a name the catalogue lacks fails the test that asked. */
export function catalogueObject(name: string): ObjectDef {
  const found = findObject(name);
  if (!found) throw new Error(`no object ${name}`);
  return found;
}

/** Inserts a connection row directly (tests only) and returns its id. */
export async function insertTestConnection(
  db: DatabasePool,
  options: { sector: Sector; provider?: string; status?: ConnectionStatus; displayName?: string },
): Promise<string> {
  const connections = createConnectionQueries(db);
  const { id } = await connections.insert({
    id: randomUUID(),
    provider: options.provider ?? `test-${options.sector}`,
    sector: options.sector,
    displayName: options.displayName ?? `Test ${options.sector}`,
    signInId: null,
    ingestSecretHash: null,
    syncIntervalMinutes: null,
  });
  if (options.status === 'paused') await connections.pause(id);
  if (options.status === 'error') await connections.noteFailure(id, 'test failure', true);
  if (options.status === 'needs_sign_in') await connections.markNeedsSignIn(id, 'test refusal');
  return id;
}

/** Creates (or rotates) an agent through the agents service and returns its key, shown only here. */
export async function createTestAgent(
  db: DatabasePool,
  options: { name: string; sectors: string[]; expiresInDays?: number },
): Promise<string> {
  const agents = createAgentService({ db, events: { publish: async () => undefined }, log: createLogger({ name: 'test', level: 'silent' }) });
  const { issued } = await agents.createOrRotate({ name: options.name, sectors: options.sectors, expiresInDays: options.expiresInDays });
  return issued.key;
}

/** Pops what producers queued for the audit-writer (tests read rows here instead of waiting for a flush). */
export async function takeQueuedAuditRows(redis: Redis): Promise<Array<Record<string, unknown>>> {
  return (await takeAuditBatch(redis, 10_000)).map((row) => JSON.parse(row) as Record<string, unknown>);
}

/**
 * Pops queued audit rows that pass `keep` until there are at least `count`, keeping what every poll took
 * (a poll empties the queue, so rows that arrive in two pieces are still all seen).
 */
export async function collectQueuedAuditRows(
  redis: Redis,
  count: number,
  keep: (row: Record<string, unknown>) => boolean = () => true,
): Promise<Array<Record<string, unknown>>> {
  const rows: Array<Record<string, unknown>> = [];
  await waitFor(async () => {
    rows.push(...(await takeQueuedAuditRows(redis)).filter(keep));
    return rows.length >= count ? true : undefined;
  }, 20_000, `${count} queued audit rows`);
  return rows;
}
