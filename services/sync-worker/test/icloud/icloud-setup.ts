import { randomUUID } from 'node:crypto';
import { Queue, type Job } from 'bullmq';
import { z } from 'zod';
import { loadConfig } from '@pcg/shared/config';
import { createConnectionQueries } from '@pcg/shared/connections';
import { sealCredentials } from '@pcg/shared/crypto';
import { sql, type DatabasePool } from '@pcg/shared/db';
import { blockingConnection, openSyncProducer, type SyncJobResult } from '@pcg/shared/queues';
import { bullmqPrefix } from '@pcg/shared/redis';
import { createSignInQueries } from '@pcg/shared/sign-ins';
import { createLoopbackFetch, createTestCertificates, type TestCertificates } from '@pcg/testkit/doubles';
import { createCapturingLogger, waitFor, type TestEnvironment } from '@pcg/testkit/testing';
import { syncWorkerConfigSchema } from '../../src/config.ts';
import { createICloudConnector, type ICloudConnectorOptions } from '../../src/connectors/icloud/icloud-connector.ts';
import { CONNECTORS } from '../../src/connectors/registry.ts';
import { startSyncWorker, type RunningSyncWorker } from '../../src/service.ts';
import { TEST_KEY, workerEnv } from '../helpers.ts';

/** The account every iCloud test signs in with; the local servers know it. */
export const ACCOUNT = { appleId: 'person@icloud.com', appPassword: 'abcd-efgh-ijkl-mnop' } as const;

export function icloudCertificates(): TestCertificates {
  return createTestCertificates(['*.icloud.com', 'imap.mail.me.com']);
}

export type ICloudRig = {
  worker: RunningSyncWorker;
  transport: ReturnType<typeof createLoopbackFetch>;
  syncNow(connectionId: string): Promise<{ job: Job; result: SyncJobResult }>;
  close(): Promise<void>;
};

/** A sync-worker whose iCloud connector reaches the local servers through the guard (only the transport is local). */
export async function startICloudRig(testEnv: TestEnvironment, certs: TestCertificates, connector: Omit<ICloudConnectorOptions, 'transport'>): Promise<ICloudRig> {
  const transport = createLoopbackFetch(certs.ca);
  const icloud = createICloudConnector({ ...connector, transport: transport.fetch });
  const env = testEnv.env(workerEnv({ SOURCE_TIMEOUT_MS: '15000' }));
  const worker = await startSyncWorker(loadConfig(syncWorkerConfigSchema, env), createCapturingLogger('sync-worker').log, {
    connectors: CONNECTORS.map((other) => (other.provider.kind === 'icloud' ? icloud : other)),
  });
  const settings = { REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: testEnv.redisPrefix };
  const producer = await openSyncProducer(settings, createCapturingLogger().log);
  const queue = new Queue('sync', { connection: blockingConnection(settings, 'icloud'), prefix: bullmqPrefix(settings) });
  return {
    worker,
    transport,
    async syncNow(connectionId) {
      const jobId = await producer.requestSync(connectionId);
      await waitFor(
        async () => {
          const state = await queue.getJobState(jobId);
          return state === 'completed' || state === 'failed' ? true : undefined;
        },
        30_000,
        `sync job ${jobId} to finish`,
      );
      const job = await queue.getJob(jobId);
      if (!job) throw new Error(`job ${jobId} vanished`);
      return { job, result: job.returnvalue as SyncJobResult };
    },
    async close() {
      await worker.close();
      await producer.close();
      await queue.close();
      await transport.close();
    },
  };
}

/**
 * The iCloud sign-in and its three connections, as the Console makes them (one per sector). `credentials`
 * is sealed as given (default: the Apple ID and app-specific password, the shape from before the iCloud
 * Mail address existed).
 */
export async function insertICloudSignIn(db: DatabasePool, credentials: Record<string, string> = ACCOUNT): Promise<Record<'calendar' | 'contacts' | 'mail', string>> {
  const signInId = randomUUID();
  const ids = { calendar: randomUUID(), contacts: randomUUID(), mail: randomUUID() };
  await db.transaction(async (tx) => {
    await createSignInQueries(tx).insert({ id: signInId, provider: 'icloud', sealed: sealCredentials(TEST_KEY, credentials, signInId), grantedScopes: [], accountId: null });
    const connections = createConnectionQueries(tx);
    for (const sector of ['calendar', 'contacts', 'mail'] as const) {
      await connections.insert({ id: ids[sector], provider: 'icloud', sector, displayName: 'iCloud', signInId, ingestSecretHash: null, syncIntervalMinutes: 15 });
    }
  });
  return ids;
}

/** Replaces a connection's sign-in credentials as the Console's PATCH does: every connection of it is active again. */
export async function replaceICloudCredentials(db: DatabasePool, connectionId: string, credentials: Record<string, string>): Promise<void> {
  const signInId = await db.oneFirst(sql.type(z.object({ sign_in_id: z.string() }))`SELECT sign_in_id::text FROM connections WHERE id = ${connectionId}::uuid`);
  await db.transaction(async (tx) => {
    await createSignInQueries(tx).replaceCredentials(signInId, sealCredentials(TEST_KEY, credentials, signInId));
    await createConnectionQueries(tx).credentialsReplaced(signInId);
  });
}

/** Replaces the stored cursor, to play a token the server no longer knows. */
export async function setCursor(db: DatabasePool, connectionId: string, cursor: unknown): Promise<void> {
  await db.query(sql.unsafe`UPDATE connections SET sync_cursor = ${sql.jsonb(cursor as Parameters<typeof sql.jsonb>[0])} WHERE id = ${connectionId}::uuid`);
}
