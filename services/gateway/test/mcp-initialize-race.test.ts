import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createAgentQueries, createAgentService, createKeyResolver, parseBearer } from '@pcg/shared/grants';
import { createCapturingLogger, createTestAgent, useTestEnvironment } from '@pcg/testkit/testing';
import { buildApp } from '../src/app.ts';
import { registerMcpRoutes, type CredentialResult, type InitializeRefusal } from '../src/mcp/mcp-routes.ts';
import { createSessionRegistry, type SessionRegistry } from '../src/mcp/session-registry.ts';
import { INITIALIZE, rawMcp, rpcError } from './gateway-harness.ts';

// The /mcp router on the real key resolver, registry and store, with one seam: a step the test runs
// inside the initialize, just before or just after it reads the agent's generation again. That is the
// window a key event must not slip through (spec 3.1: "a session still starting is refused too").
const testEnv = useTestEnvironment();
const { log } = createCapturingLogger('gateway');
let app: FastifyInstance;
let address: string;
let registry: SessionRegistry;
let step: { when: 'before read' | 'after read'; run: () => Promise<void> } | undefined;
const refusals: InitializeRefusal[] = [];

const agents = () => createAgentService({ db: testEnv.db, events: { publish: async () => undefined }, log });

beforeAll(async () => {
  const resolver = createKeyResolver({ db: testEnv.db, direct: testEnv.direct });
  const queries = createAgentQueries(testEnv.db);
  registry = createSessionRegistry({ maxSessions: 16, idleMs: 3_600_000, log });
  app = buildApp({ log });
  registerMcpRoutes(app, {
    registry,
    server: { serviceName: 'race-test', tools: [], listing: [], log },
    async resolveAuthorization(header): Promise<CredentialResult> {
      const credential = parseBearer(header);
      if (credential.kind === 'none') return { ok: false, reason: 'missing' };
      const resolved = await resolver.resolveKey(credential.token);
      return resolved.ok ? { ok: true, grant: resolved.grant, validUntil: null } : { ok: false, reason: resolved.reason };
    },
    challenge: () => undefined,
    async currentGeneration(agentId) {
      const pending = step;
      step = undefined;
      if (pending?.when === 'before read') await pending.run();
      const generation = await queries.liveGeneration(agentId);
      if (pending?.when === 'after read') await pending.run();
      return generation;
    },
    onInitializeRefused: (refusal) => refusals.push(refusal),
    log,
  });
  address = await app.listen({ host: '127.0.0.1', port: 0 });
});
afterAll(async () => {
  await registry.closeAll('test over');
  await app.close();
});
beforeEach(() => {
  refusals.length = 0;
});

const initialize = (key: string) => rawMcp(address, { headers: { authorization: `Bearer ${key}` }, body: INITIALIZE });

describe('an initialize that races a key event (issue 12 item 5, design 4.7)', () => {
  it.each([
    ['a rotation', (name: string) => agents().rotate(name), 'access denied: unknown agent'],
    ['a revoke', (name: string) => agents().revoke(name), 'access denied: revoked'],
    ['a sector edit', (name: string) => agents().update(name, { sectors: ['health'] }), 'access denied: the grant changed while the session was starting; connect again'],
  ])('is refused with 401 -32001 when %s lands before the generation is read again', async (label, act, text) => {
    const name = `before-${label.replaceAll(' ', '-')}`;
    const key = await createTestAgent(testEnv.db, { name, sectors: ['finance'] });
    step = { when: 'before read', run: async () => void (await act(name)) };
    const answer = await initialize(key);
    expect(answer.status).toBe(401);
    expect(answer.headers.get('mcp-session-id')).toBeNull();
    expect(answer.json()).toEqual(rpcError(-32001, 'Unauthorized', 1, text));
    expect(refusals).toEqual([{ denyReason: text, keyPresented: true }]);
    expect(registry.size).toBe(0);
  });

  it('is refused when the key event arrives after the generation was read, before the session is registered', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'after-read', sectors: ['finance'] });
    step = {
      when: 'after read',
      run: async () => {
        await agents().revoke('after-read');
        // What the agent-event listener does when the revoke's message arrives.
        await registry.endAgent('after-read', 'agent revoked');
      },
    };
    const answer = await initialize(key);
    expect(answer.status).toBe(401);
    expect(answer.headers.get('mcp-session-id')).toBeNull();
    expect(answer.json()).toEqual(rpcError(-32001, 'Unauthorized', 1, 'access denied: revoked'));
    expect(registry.size).toBe(0);
  });

  it('opens the session when nothing changed', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'no-race', sectors: ['finance'] });
    const answer = await initialize(key);
    expect(answer.status).toBe(200);
    expect(registry.touch(answer.headers.get('mcp-session-id') as string)?.grant.agentName).toBe('no-race');
    expect(refusals).toEqual([]);
  });

  it('does not keep a session the transport itself refused (an Accept header without SSE)', async () => {
    const key = await createTestAgent(testEnv.db, { name: 'bad-accept', sectors: [] });
    const before = registry.size;
    const answer = await rawMcp(address, { headers: { authorization: `Bearer ${key}`, accept: 'application/json' }, body: INITIALIZE });
    expect(answer.status).toBe(406);
    expect(registry.size).toBe(before);
  });
});
