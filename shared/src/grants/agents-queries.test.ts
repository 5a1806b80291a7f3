import { describe, expect, it } from 'vitest';
import type { DirectPool } from '../db/index.ts';
import { createTestAgent, useTestEnvironment } from '@pcg/testkit/testing';
import { hashAgentKey } from './agent-key-fns.ts';
import { createAgentQueries } from './agents-queries.ts';

const testEnv = useTestEnvironment();

describe('findByKeyHash: the key lookup, on a pool (direct reads) and in a transaction (slonik)', () => {
  it('finds the same row both ways, and no row for a key nobody holds', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'lookup-both-ways', sectors: ['finance', 'health'] });
    const statements: (string | undefined)[] = [];
    const direct = {
      read: async (statement) => {
        statements.push(statement.name);
        return testEnv.direct.read(statement);
      },
      connect: () => testEnv.direct.connect(),
    } satisfies DirectPool;
    const onPool = await createAgentQueries(testEnv.db, direct).findByKeyHash(hashAgentKey(key));
    expect(statements).toEqual(['pcg_agent_by_key_hash']);
    const inTransaction = await testEnv.db.transaction((tx) => createAgentQueries(tx).findByKeyHash(hashAgentKey(key)));
    expect(statements).toHaveLength(1);
    expect(onPool).toMatchObject({ name: 'lookup-both-ways', sectors: ['finance', 'health'], revokedAt: null, expiresAt: null, generation: 0 });
    expect(onPool?.keyHash.equals(hashAgentKey(key))).toBe(true);
    expect(inTransaction).toEqual(onPool);

    const unknown = hashAgentKey(`${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}`);
    expect(await createAgentQueries(testEnv.db, direct).findByKeyHash(unknown)).toBeNull();
    expect(await testEnv.db.transaction((tx) => createAgentQueries(tx).findByKeyHash(unknown))).toBeNull();
  });
});
