import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@pcg/shared/config';
import { AGENT_KEY_PREFIX, createKeyResolver, hashAgentKey } from '@pcg/shared/grants';
import { createCapturingLogger, useTestEnvironment } from '@pcg/testkit/testing';
import { consoleConfigSchema } from '../src/config.ts';
import { startConsole, type RunningConsole } from '../src/service.ts';

const testEnv = useTestEnvironment();
const capture = createCapturingLogger('console');
let consoleService: RunningConsole;

beforeAll(async () => {
  const config = loadConfig(consoleConfigSchema, testEnv.env({ REST_PORT: '0', LOG_LEVEL: 'trace' }));
  consoleService = await startConsole(config, capture.log);
});
afterAll(async () => consoleService.close());

const post = async (path: string, body?: unknown) => {
  const response = await fetch(`${consoleService.address}${path}`, {
    method: 'POST',
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as { key?: string } };
};

/** Every form a key, or its stored hash, could take in a log line. */
function secretForms(key: string): string[] {
  const hash = hashAgentKey(key);
  return [key, key.slice(AGENT_KEY_PREFIX.length), hash.toString('hex'), hash.toString('base64'), hash.toString('base64url')];
}

describe('logging (spec 5 rule 5: the key is never logged)', () => {
  it('writes no key anywhere in the log across a create, rotations and refused resolves', async () => {
    const created = await post('/api/agents', { name: 'logged', sectors: ['finance'], expiresInDays: 30 });
    expect(created.status).toBe(201);
    const rotatedByName = await post('/api/agents', { name: 'logged', sectors: ['finance'] });
    expect(rotatedByName.status).toBe(200);
    const rotated = await post('/api/agents/logged/rotate');
    expect(rotated.status).toBe(200);
    const keys = [created.body.key, rotatedByName.body.key, rotated.body.key].map((key) => {
      if (!key) throw new Error('an answer carried no key');
      return key;
    });

    const resolver = createKeyResolver({ db: testEnv.db, direct: testEnv.direct, log: capture.log });
    const refused = await resolver.resolveAuthorization(`Bearer ${keys[0]}`);
    expect(refused).toEqual({ ok: false, reason: 'unknown agent' });
    await post('/api/agents/logged/revoke');
    expect(await resolver.resolveAuthorization(`Bearer ${keys[2]}`)).toEqual({ ok: false, reason: 'revoked' });
    expect(await resolver.resolveAuthorization(`Bearer ${keys[2]}x`)).toMatchObject({ ok: false, malformed: true });

    const lines = capture.lines();
    // The capture is live: the changes and the refusals were logged, only without their keys.
    expect(lines.some((line) => line.includes('agent grant changed') && line.includes('"kind":"rotated"'))).toBe(true);
    expect(lines.some((line) => line.includes('agent key refused') && line.includes('"reason":"revoked"'))).toBe(true);
    const leaks = keys.flatMap(secretForms).filter((secret) => lines.some((line) => line.includes(secret)));
    expect(leaks).toEqual([]);
    expect(lines.join('\n')).not.toMatch(/pcg_[A-Za-z0-9_-]{20,}/);
  });
});
