import { randomBytes, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createConnectionQueries } from '@pcg/shared/connections';
import { openCredentials, sealCredentials } from '@pcg/shared/crypto';
import { sql } from '@pcg/shared/db';
import type { ItemRemoveJob } from '@pcg/shared/queues';
import { createSignInQueries } from '@pcg/shared/sign-ins';
import { createCapturingLogger, useTestEnvironment } from '@pcg/testkit/testing';
import { createConnectionsService } from '../src/connections/connections-service.ts';

// The Console's side of removing an aggregator's item (design 7.1): the deletion is done in the
// database first, then the removal is handed over, sealed; what happens to the hand-over never holds
// the deletion back.
const testEnv = useTestEnvironment();
const key = randomBytes(32);
const noSync = { schedule: async () => undefined, unschedule: async () => undefined, requestSync: async () => 'job' };

function serviceWith(removeItem: (job: ItemRemoveJob) => Promise<string>) {
  const { log, lines } = createCapturingLogger('console');
  const service = createConnectionsService({
    db: testEnv.db,
    queries: createConnectionQueries(testEnv.db),
    sync: noSync,
    credentialsKey: key,
    audit: { record: () => undefined },
    log,
    itemRemoval: { removeItem },
  });
  return { service, lines };
}

/** A sign-in of `provider` with one connection per sector, as a finished sign-in leaves them. */
async function signInWith(provider: string, sectors: readonly string[]): Promise<{ signInId: string; connectionIds: string[]; sealed: Buffer; accessToken: string }> {
  const signInId = randomUUID();
  const accessToken = `access-sandbox-${randomUUID()}`;
  const sealed = sealCredentials(key, { accessToken, itemId: `item-${signInId}` }, signInId);
  await createSignInQueries(testEnv.db).insert({ id: signInId, provider, sealed, grantedScopes: [], accountId: `item-${signInId}` });
  const connectionIds: string[] = [];
  for (const sector of sectors) {
    const id = randomUUID();
    await createConnectionQueries(testEnv.db).insert({ id, provider, sector, displayName: `${provider} ${sector}`, signInId, ingestSecretHash: null, syncIntervalMinutes: 240 });
    connectionIds.push(id);
  }
  return { signInId, connectionIds, sealed, accessToken };
}
const signInCount = (id: string) => testEnv.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM sign_ins WHERE id = ${id}::uuid`);

describe('deleting a connection of a hosted-link sign-in', () => {
  it("hands over the item's removal with the credentials as they were sealed, once its last connection goes", async () => {
    const handed: ItemRemoveJob[] = [];
    const { service, lines } = serviceWith(async (job) => {
      handed.push(job);
      return 'job-1';
    });
    // The aggregator covers finance only; a second sector here stands for any sign-in that keeps another connection.
    const { signInId, connectionIds, sealed, accessToken } = await signInWith('plaid', ['finance', 'health']);
    await service.remove(connectionIds[0] ?? '');
    expect(handed).toEqual([]);
    expect(await signInCount(signInId)).toBe(1);
    await service.remove(connectionIds[1] ?? '');
    expect(await signInCount(signInId)).toBe(0);
    expect(handed).toEqual([{ provider: 'plaid', signInId, sealedCredentials: sealed.toString('base64') }]);
    // Still sealed, bound to the deleted sign-in: the worker opens it with the same key and id.
    expect(JSON.stringify(handed)).not.toContain(accessToken);
    expect(openCredentials(key, Buffer.from(handed[0]?.sealedCredentials ?? '', 'base64'), signInId)).toMatchObject({ accessToken });
    expect(lines().join('\n')).toContain('item removal handed to the sync-worker');
  });

  it('deletes all the same when the queue cannot take the removal, and says so in the log', async () => {
    const { service, lines } = serviceWith(async () => {
      throw new Error('Connection is closed.');
    });
    const { signInId, connectionIds, accessToken } = await signInWith('plaid', ['finance']);
    await expect(service.remove(connectionIds[0] ?? '')).resolves.toBeUndefined();
    expect(await signInCount(signInId)).toBe(0);
    const log = lines().join('\n');
    expect(log).toContain('could not queue the removal of the item');
    expect(log).not.toContain(accessToken);
  });

  it('hands nothing over for a provider that holds no item (a pasted token)', async () => {
    const handed: ItemRemoveJob[] = [];
    const { service } = serviceWith(async (job) => {
      handed.push(job);
      return 'job-2';
    });
    const { signInId, connectionIds } = await signInWith('home-assistant', ['home']);
    await service.remove(connectionIds[0] ?? '');
    expect(await signInCount(signInId)).toBe(0);
    expect(handed).toEqual([]);
  });
});
