import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '@pcg/shared/db';
import { DomainError } from '@pcg/shared/errors';
import { applyGrant, createSignInQueries } from '@pcg/shared/sign-ins';
import { useTestEnvironment } from '@pcg/testkit/testing';
import { refuseUnlessLocalPeer } from '../src/sign-ins/demo-peer.ts';
import { api, collectingAudit, startTestConsole, type TestConsole } from './helpers.ts';

// Issue 42 "The demo in one command": the demo mark is set when the demo creates a sign-in and can never be
// added to an existing one; stand-ins are loopback addresses only; the demo proves itself by asking from
// this machine. Spec 1 item 9: outbound only to the sources, so a stand-in is never another host.
const testEnv = useTestEnvironment();
let consoleService: TestConsole;

beforeAll(async () => {
  consoleService = await startTestConsole(testEnv, collectingAudit().recorder);
  const saved = await api(consoleService.address, 'PUT', '/api/connect/google/app', { clientId: 'demo-client', clientSecret: 'demo-secret' });
  expect(saved.status).toBe(204);
});
afterAll(async () => {
  await consoleService?.close();
});

const demoStart = (provider: string, endpoints: unknown) =>
  fetch(`${consoleService.address}/api/connect/${provider}/demo-start`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ endpoints }) });

describe('a demo sign-in (issue 42)', () => {
  it('starts at the loopback stand-in it names, bound to this browser, while an ordinary start still goes to the provider', async () => {
    const started = await demoStart('google', { GOOGLE_BASE_URL: 'http://127.0.0.1:45678' });
    expect(started.status).toBe(200);
    const { location } = (await started.json()) as { location: string };
    expect(new URL(location).origin).toBe('http://127.0.0.1:45678');
    expect(started.headers.get('set-cookie')).toMatch(/^pcg_sign_in_google=[^;]+; Path=\/api\/connect\/google\/callback/);
    const ordinary = await fetch(`${consoleService.address}/api/connect/google/start`, { redirect: 'manual' });
    expect(new URL(ordinary.headers.get('location') ?? '').origin).toBe('https://accounts.google.com');
  });

  it.each([
    ['a host on the network', { GOOGLE_BASE_URL: 'http://192.168.1.10:8080' }],
    ['a name, which could resolve anywhere', { GOOGLE_BASE_URL: 'http://localhost:45678' }],
    ['https (a stand-in is a local http double)', { GOOGLE_BASE_URL: 'https://127.0.0.1:45678' }],
    ['an address with a path', { GOOGLE_BASE_URL: 'http://127.0.0.1:45678/elsewhere' }],
    ["the gateway's own agent port", { GOOGLE_BASE_URL: 'http://127.0.0.1:8788' }],
    ['a setting that is not a stand-in origin', { DATABASE_URL: 'http://127.0.0.1:45678' }],
    ['no stand-in at all', {}],
  ])('refuses a stand-in that is %s, and nothing is started', async (_what, endpoints) => {
    const started = await demoStart('google', endpoints);
    expect(started.status).toBe(400);
    expect(started.headers.get('set-cookie')).toBeNull();
  });

  it('takes a demo claim only for a bridge on this machine', async () => {
    const setupToken = Buffer.from('https://bridge.example.org/simplefin/claim/abc').toString('base64');
    const claimed = await api(consoleService.address, 'POST', '/api/connect/simplefin/claim', { setupToken, demo: true });
    expect(claimed.status).toBe(400);
    expect(claimed.json.error).toContain('loopback');
  });

  it.each([
    ['192.0.2.7', false],
    ['fd00::2', false],
    ['::ffff:192.0.2.7', false],
    [undefined, false],
    ['127.0.0.1', true],
    ['::ffff:127.0.0.1', true],
    ['::1', true],
  ])('a demo sign-in asked for from peer %s is taken: %s', (peer, taken) => {
    const ask = () => refuseUnlessLocalPeer(peer);
    if (taken) expect(ask).not.toThrow();
    else expect(ask).toThrow(DomainError);
  });

  it("is marked only when it is made: the database refuses adding the mark to an operator's sign-in, or changing or removing a demo's", async () => {
    const signIns = createSignInQueries(testEnv.db);
    const operator = '00000000-0000-4000-8000-000000000001';
    const demo = '00000000-0000-4000-8000-000000000002';
    await signIns.insert({ id: operator, provider: 'google', sealed: Buffer.from('x'), grantedScopes: [], accountId: 'operator@example.org' });
    await signIns.insert({ id: demo, provider: 'google', sealed: Buffer.from('x'), grantedScopes: [], accountId: 'demo@example.org', demoEndpoints: { GOOGLE_BASE_URL: 'http://127.0.0.1:45678' } });
    const mark = sql.jsonb({ GOOGLE_BASE_URL: 'http://127.0.0.1:1' });
    await expect(testEnv.db.query(sql.unsafe`UPDATE sign_ins SET demo_endpoints = ${mark} WHERE id = ${operator}::uuid`)).rejects.toThrow(/check integrity constraint/);
    await expect(testEnv.db.query(sql.unsafe`UPDATE sign_ins SET demo_endpoints = ${mark} WHERE id = ${demo}::uuid`)).rejects.toThrow(/check integrity constraint/);
    await expect(testEnv.db.query(sql.unsafe`UPDATE sign_ins SET demo_endpoints = NULL WHERE id = ${demo}::uuid`)).rejects.toThrow(/check integrity constraint/);
    expect((await signIns.get(operator))?.demo_endpoints).toBeNull();
    expect((await signIns.get(demo))?.demo_endpoints).toEqual({ GOOGLE_BASE_URL: 'http://127.0.0.1:45678' });
  });

  it("never renews an operator's sign-in of the same account with a demo grant, nor a demo sign-in with an operator's grant", async () => {
    const provider = { kind: 'google', displayName: 'Google', defaultSyncIntervalMinutes: 60 };
    const grant = { provider, grantedScopes: ['https://www.googleapis.com/auth/calendar.readonly'], sectors: ['calendar'], seal: () => Buffer.from('sealed') };
    const operatorGrant = await applyGrant(testEnv.db, { ...grant, accountId: 'person@example.org' });
    expect(operatorGrant.outcome).toBe('signed_in');
    const demoOverOperator = await applyGrant(testEnv.db, { ...grant, accountId: 'person@example.org', demoEndpoints: { GOOGLE_BASE_URL: 'http://127.0.0.1:45678' } });
    expect(demoOverOperator.outcome).toBe('refused');

    const demoGrant = await applyGrant(testEnv.db, { ...grant, accountId: 'demo-person@example.org', demoEndpoints: { GOOGLE_BASE_URL: 'http://127.0.0.1:45678' } });
    expect(demoGrant.outcome).toBe('signed_in');
    expect((await applyGrant(testEnv.db, { ...grant, accountId: 'demo-person@example.org' })).outcome).toBe('refused');
    expect((await applyGrant(testEnv.db, { ...grant, accountId: 'demo-person@example.org', demoEndpoints: { GOOGLE_BASE_URL: 'http://127.0.0.1:45679' } })).outcome).toBe('refused');
    // The same demo again renews it (a second demo run makes no second sign-in).
    const again = await applyGrant(testEnv.db, { ...grant, accountId: 'demo-person@example.org', demoEndpoints: { GOOGLE_BASE_URL: 'http://127.0.0.1:45678' } });
    expect(again).toMatchObject({ outcome: 'signed_in', renewed: true });
    const marks = await testEnv.db.anyFirst(sql.unsafe`SELECT demo_endpoints FROM sign_ins WHERE account_id IN ('person@example.org', 'demo-person@example.org') ORDER BY account_id`);
    expect(marks).toEqual([{ GOOGLE_BASE_URL: 'http://127.0.0.1:45678' }, null]);
  });
});
