import { randomUUID } from 'node:crypto';
import type { DatabasePool } from 'slonik';
import { takeAuditBatch } from '../audit/index.ts';
import { createConnectionQueries, type ConnectionStatus } from '../connections/index.ts';
import { createAgentService } from '../grants/index.ts';
import { createLogger } from '../logger/index.ts';
import type { Redis } from '../redis/index.ts';
import type { Sector } from '../sectors/index.ts';

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
