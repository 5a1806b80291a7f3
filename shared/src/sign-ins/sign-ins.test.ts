import { randomBytes, randomUUID } from 'node:crypto';
import { sql } from 'slonik';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createConnectionQueries } from '../connections/index.ts';
import { openCredentials, sealCredentials } from '../crypto/index.ts';
import { createDatabase } from '../db/index.ts';
import { useMigrationDatabase, useTestEnvironment } from '@pcg/testkit/testing';
import { applyGrant, noLongerGranted, type Grant } from './apply-grant.ts';
import { createSignInQueries } from './sign-ins-queries.ts';
import { OTHER_ACCOUNT } from './sign-ins-types.ts';

const testEnv = useTestEnvironment();
const key = randomBytes(32);
const provider = { kind: 'test-oauth', displayName: 'Test provider', defaultSyncIntervalMinutes: 30 };
const grant = (overrides: Partial<Grant> & { token: string }): Grant => ({
  provider,
  accountId: 'account-a',
  grantedScopes: ['mail', 'calendar'],
  sectors: ['mail', 'calendar'],
  seal: (signInId) => sealCredentials(key, { accessToken: overrides.token }, signInId),
  ...overrides,
});
const connectionsOf = (signInId: string) => createConnectionQueries(testEnv.db).ofSignIn(signInId);
const tokenOf = async (signInId: string) => {
  const sealed = await createSignInQueries(testEnv.db).sealed(signInId);
  return (openCredentials(key, sealed ?? Buffer.alloc(0), signInId) as { accessToken: string }).accessToken;
};
const count = (table: 'sign_ins' | 'connections') =>
  testEnv.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM ${sql.identifier([table])}`);

describe('applying a provider grant (spec 2.5, design 7.1)', () => {
  let signInId = '';

  it('makes one sign-in holding the credentials once and one connection per covered sector', async () => {
    const outcome = await applyGrant(testEnv.db, grant({ token: 'first' }));
    if (outcome.outcome !== 'signed_in') throw new Error(outcome.message);
    signInId = outcome.signInId;
    expect(outcome.renewed).toBe(false);
    expect((await connectionsOf(signInId)).map((row) => [row.sector, row.status, row.sign_in_id])).toEqual([
      ['calendar', 'active', signInId],
      ['mail', 'active', signInId],
    ]);
    expect(outcome.active).toHaveLength(2);
    expect(await tokenOf(signInId)).toBe('first');
    expect(await createSignInQueries(testEnv.db).get(signInId)).toMatchObject({ account_id: 'account-a', granted_scopes: ['mail', 'calendar'], status: 'active' });
  });

  it('makes nothing for a grant that covers no sector', async () => {
    const before = [await count('sign_ins'), await count('connections')];
    expect(await applyGrant(testEnv.db, grant({ token: 'none', accountId: 'account-z', grantedScopes: ['profile'], sectors: [] }))).toEqual({
      outcome: 'refused',
      // Spec 7: the Console says the sign-in granted no sectors.
      message: 'the sign-in granted no sectors',
    });
    expect([await count('sign_ins'), await count('connections')]).toEqual(before);
  });

  it('renews in place for the same account: rows kept, a sector no longer granted waits with its data', async () => {
    const [calendar] = await connectionsOf(signInId);
    await testEnv.db.query(sql.unsafe`
      INSERT INTO calendar_events (connection_id, source, source_id, title) VALUES (${calendar?.id ?? ''}::uuid, 'test-oauth', 'e1', 'Kept')`);
    const outcome = await applyGrant(testEnv.db, grant({ token: 'second', signInId, grantedScopes: ['mail'], sectors: ['mail'] }));
    expect(outcome).toMatchObject({ outcome: 'signed_in', signInId, renewed: true, waiting: ['calendar'] });
    expect(await tokenOf(signInId)).toBe('second');
    expect((await connectionsOf(signInId)).map((row) => [row.sector, row.status, row.last_error])).toEqual([
      ['calendar', 'needs_sign_in', noLongerGranted('calendar')],
      ['mail', 'active', null],
    ]);
    expect(await testEnv.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM calendar_events WHERE source_id = 'e1'`)).toBe(1);

    // Granted again (a new sign-in of the same account finds this one): the waiting connection comes back.
    expect(await applyGrant(testEnv.db, grant({ token: 'third' }))).toMatchObject({ outcome: 'signed_in', signInId, renewed: true, waiting: [] });
    expect((await connectionsOf(signInId)).map((row) => row.status)).toEqual(['active', 'active']);
  });

  it('refuses to renew a sign-in with another account, leaving its credentials alone', async () => {
    expect(await applyGrant(testEnv.db, grant({ token: 'intruder', signInId, accountId: 'account-b' }))).toEqual({ outcome: 'refused', message: OTHER_ACCOUNT });
    expect(await tokenOf(signInId)).toBe('third');
  });

  it('puts every connection of a sign-in whose grant is gone into needs sign-in, data kept', async () => {
    await testEnv.db.transaction(async (tx) => createSignInQueries(tx).grantGone(signInId, 'the provider refused the refresh'));
    expect((await connectionsOf(signInId)).map((row) => row.status)).toEqual(['needs_sign_in', 'needs_sign_in']);
    expect((await createSignInQueries(testEnv.db).get(signInId))?.status).toBe('needs_sign_in');
  });
});

describe('the sign-ins migration', () => {
  const scratch = useMigrationDatabase();

  it('turns each hub connection into a sign-in whose sealed credentials still open', async () => {
    expect(await scratch.migrate(5)).toHaveLength(5);
    const database = await createDatabase(scratch.url, { maximumPoolSize: 1 });
    const db = database.pool;
    try {
      const hub = randomUUID();
      const credentials = { baseUrl: 'http://hub.lan:8123', token: 'hub-token' };
      await db.query(sql.unsafe`
        INSERT INTO connections (id, user_id, provider, sector, credentials) VALUES (${hub}::uuid, 1, 'home-assistant', 'home', ${sql.binary(sealCredentials(key, credentials, hub))})`);
      await db.query(sql.unsafe`INSERT INTO connections (user_id, provider, sector) VALUES (1, 'health-auto-export', 'health')`);
      await scratch.migrate(Infinity);
      const rows = await createConnectionQueries(db).list();
      expect(rows.map((row) => [row.provider, row.sign_in_id])).toEqual([
        ['health-auto-export', null],
        ['home-assistant', hub],
      ]);
      const sealed = await createConnectionQueries(db).sealedCredentials(hub);
      expect(openCredentials(key, sealed?.credentials ?? Buffer.alloc(0), sealed?.context ?? '')).toEqual(credentials);
    } finally {
      await database.end();
    }
  });
});
