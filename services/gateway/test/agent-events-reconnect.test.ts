import type { SessionTransport } from '../src/mcp/session-transport.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgentQueries, createKeyResolver, type Grant } from '@pcg/shared/grants';
import { createCapturingLogger, createTestAgent, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { startOwnRedis, type OwnRedis } from '../../../test/support/own-stores.ts';
import { listenForAgentEvents } from '../src/mcp/agent-events.ts';
import { createSessionRegistry, type SessionHandle } from '../src/mcp/session-registry.ts';

/**
 * Issue 12 item 3, the re-check after a Redis reconnect on its own: the fallback poll is slowed to an
 * hour, so the only thing that can end a session whose grant changed during the outage is the last
 * check made once the event channel is subscribed again.
 */
const testEnv = useTestEnvironment();
let redis: OwnRedis;

beforeAll(async () => {
  redis = await startOwnRedis();
});
afterAll(async () => redis?.dispose());

async function grantOf(key: string): Promise<Grant> {
  const resolved = await createKeyResolver({ db: testEnv.db, direct: testEnv.direct }).resolveKey(key);
  if (!resolved.ok) throw new Error(`key refused: ${resolved.reason}`);
  return resolved.grant;
}

function handle(id: string, grant: Grant): SessionHandle & { closed: number } {
  const session = {
    id,
    grant,
    credentialHash: `hash-of-${id}`,
    credentialValidUntil: null,
    transport: {} as SessionTransport,
    protocolVersion: '2025-11-25',
    eventIdStatus: () => 'unknown' as const,
    closed: 0,
    async close() {
      session.closed += 1;
    },
  };
  return session;
}

describe('the re-check after a Redis reconnect (issue 12 item 3)', () => {
  it('ends the session of a grant deleted and re-created under the same name while Redis was away, and only that one', async () => {
    const { log, lines } = createCapturingLogger('gateway');
    const registry = createSessionRegistry({ maxSessions: 8, idleMs: 3_600_000, log });
    const listener = await listenForAgentEvents({
      settings: { REDIS_URL: redis.url, REDIS_PREFIX: testEnv.redisPrefix },
      db: testEnv.db,
      registry,
      log,
      fallbackPollMs: 3_600_000,
    });
    try {
      const recreated = handle('s-recreated', await grantOf(await createTestAgent(testEnv.db, { name: 'reconnect-x', sectors: ['finance'] })));
      const bystander = handle('s-bystander', await grantOf(await createTestAgent(testEnv.db, { name: 'reconnect-y', sectors: ['finance'] })));
      for (const session of [recreated, bystander]) expect(registry.reserve(session.grant.agentName)?.commit(session)).toBe(true);

      await redis.stop();
      await waitFor(() => (lines().some((line) => line.includes('agent events channel down')) ? true : undefined), 5_000, 'the listener to see Redis go');
      await createAgentQueries(testEnv.db).remove('reconnect-x');
      const newKey = await createTestAgent(testEnv.db, { name: 'reconnect-x', sectors: ['home'] });
      const newGrant = await grantOf(newKey);
      // Same name, same generation: only the row's id tells the new grant from the one the session holds.
      expect(newGrant).toMatchObject({ agentName: 'reconnect-x', generation: recreated.grant.generation, sectors: ['home'] });
      expect(newGrant.agentId).not.toBe(recreated.grant.agentId);
      expect(recreated.closed).toBe(0);

      await redis.start();
      await waitFor(() => (recreated.closed === 1 ? true : undefined), 15_000, 'the re-check after the reconnect');
      const recheck = await waitFor(() => lines().find((line) => line.includes('rechecked live sessions after a Redis reconnect')), 5_000, 'the re-check line');
      expect(JSON.parse(recheck)).toMatchObject({ ended: 1 });
      expect(bystander.closed).toBe(0);
      expect(registry.touch('s-bystander')).toBeDefined();
      expect(registry.touch('s-recreated')).toBeUndefined();
    } finally {
      await registry.closeAll('test over');
      await listener.close();
    }
  });
});
