import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { sql } from '@pcg/shared/db';
import { createKeyResolver, generateAgentKey, hashAgentKey } from '@pcg/shared/grants';
import { useTestEnvironment } from '@pcg/testkit/testing';

// Spec 2.2: the agent grant, one per agent name, and nothing else.
const testEnv = useTestEnvironment();

describe('the agent grant in the store', () => {
  it('holds the fields of spec 2.2 and only its own bookkeeping besides', async () => {
    const columns = await testEnv.db.manyFirst(sql.type(z.object({ column_name: z.string() }))`
      SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'agents' ORDER BY column_name`);
    // id, generation and updated_at are bookkeeping (row id, key-event counter, last change); no other grant field exists.
    expect(columns).toEqual(['created_at', 'expires_at', 'generation', 'id', 'key_hash', 'name', 'revoked_at', 'sectors', 'updated_at', 'user_id']);
  });

  it('has no table of finer grants: only the bridge codes and token chains point at an agent', async () => {
    const referencing = await testEnv.db.manyFirst(sql.type(z.object({ table_name: z.string() }))`
      SELECT DISTINCT c.conrelid::regclass::text AS table_name FROM pg_constraint c
      WHERE c.contype = 'f' AND c.confrelid = 'agents'::regclass ORDER BY 1`);
    expect(referencing).toEqual(['oauth_chains', 'oauth_codes']);
  });

  it('starts with an empty sector list, which resolves and grants nothing', async () => {
    const key = generateAgentKey();
    const sectors = await testEnv.db.oneFirst(sql.type(z.object({ sectors: z.array(z.string()) }))`
      INSERT INTO agents (user_id, name, key_hash) VALUES (1, 'fresh', ${sql.binary(hashAgentKey(key))}) RETURNING sectors`);
    expect(sectors).toEqual([]);
    expect(await createKeyResolver({ db: testEnv.db, direct: testEnv.direct }).resolveKey(key)).toMatchObject({ ok: true, grant: { agentName: 'fresh', sectors: [] } });
  });

  it('keeps one grant per agent name', async () => {
    const insert = (name: string) =>
      testEnv.db.query(sql.unsafe`INSERT INTO agents (user_id, name, key_hash) VALUES (1, ${name}, ${sql.binary(hashAgentKey(generateAgentKey()))})`);
    await insert('only-once');
    await expect(insert('only-once')).rejects.toThrow(/unique/i);
  });
});
