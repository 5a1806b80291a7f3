import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONSOLE_ACTS } from '@pcg/shared/audit';
import { openCredentials } from '@pcg/shared/crypto';
import { sql } from '@pcg/shared/db';
import { blockingConnection, openSyncProducer } from '@pcg/shared/queues';
import { bullmqPrefix } from '@pcg/shared/redis';
import { createCapturingLogger, useTestEnvironment } from '@pcg/testkit/testing';
import { z } from 'zod';
import { api, collectingAudit, startTestConsole, type TestConsole } from './helpers.ts';

const testEnv = useTestEnvironment();
const audit = collectingAudit();
const settings = () => ({ REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: testEnv.redisPrefix });
let consoleService: TestConsole;
let producer: Awaited<ReturnType<typeof openSyncProducer>>;
let queue: Queue;
const TOKEN = 'hub-long-lived-token-abc123';
const call = (method: string, path: string, body?: unknown) => api(consoleService.address, method, path, body);
const scheduled = async () => new Map((await producer.schedules()).map((entry) => [entry.connectionId, entry.everyMs]));

beforeAll(async () => {
  consoleService = await startTestConsole(testEnv, audit.recorder);
  producer = await openSyncProducer(settings(), createCapturingLogger().log);
  queue = new Queue('sync', { connection: blockingConnection(settings(), 'test'), prefix: bullmqPrefix(settings()) });
});
afterAll(async () => {
  await queue?.close();
  await producer?.close();
  await consoleService?.close();
});

describe('connecting a hub', () => {
  let id: string;

  it('creates the connection, seals the token, schedules its first sync and never shows the token', async () => {
    const created = await call('POST', '/api/connections', { provider: 'home-assistant', credentials: { baseUrl: 'http://hub.lan:8123/', token: TOKEN } });
    expect(created.status).toBe(201);
    id = created.json.connection.id;
    expect(created.json.connection).toMatchObject({ provider: 'home-assistant', sector: 'home', status: 'active', health: 'pending', signIn: 'token', syncIntervalMinutes: 15 });
    expect(created.json.ingestSecret).toBeUndefined();
    expect(created.text).not.toContain(TOKEN);
    expect(created.text).not.toMatch(/credentials|hash/i);
    // Sealed once, on the sign-in the connection points at (design 7.1).
    const stored = await testEnv.db.oneFirst(sql.type(z.object({ credentials: z.instanceof(Buffer) }))`
      SELECT s.credentials FROM sign_ins s JOIN connections c ON c.sign_in_id = s.id WHERE c.id = ${id}::uuid`);
    expect(stored.includes(Buffer.from(TOKEN))).toBe(false);
    expect((await scheduled()).get(id)).toBe(15 * 60_000);
    expect(consoleService.logs().join('\n')).not.toContain(TOKEN);
  });

  it('refuses bad credentials naming the field, never the value', async () => {
    const refused = await call('POST', '/api/connections', { provider: 'home-assistant', credentials: { baseUrl: 'ftp://hub', token: TOKEN } });
    expect(refused.status).toBe(400);
    expect(refused.json.error).toContain("'credentials.baseUrl'");
    expect(refused.text).not.toContain(TOKEN);
    expect((await call('POST', '/api/connections', { provider: 'myspace' })).json.error).toContain("unknown provider 'myspace'");
  });

  it.each(['http://', '', 'https://', 'http:'])('refuses a hub address %j with 400 naming the field, on create and on a credentials change', async (baseUrl) => {
    const refused = await call('POST', '/api/connections', { provider: 'home-assistant', credentials: { baseUrl, token: TOKEN } });
    expect({ status: refused.status, error: refused.json.error }).toEqual({ status: 400, error: expect.stringContaining("'credentials.baseUrl'") });
    const hub = await call('POST', '/api/connections', { provider: 'home-assistant', credentials: { baseUrl: 'http://hub.lan:8123', token: TOKEN } });
    const changed = await call('PATCH', `/api/connections/${hub.json.connection.id as string}`, { credentials: { baseUrl, token: TOKEN } });
    expect({ status: changed.status, error: changed.json.error }).toEqual({ status: 400, error: expect.stringContaining("'credentials.baseUrl'") });
  });

  it('lists connections without credentials', async () => {
    const listed = await call('GET', '/api/connections');
    expect(listed.json.connections.map((c: { id: string }) => c.id)).toContain(id);
    expect(listed.text).not.toContain(TOKEN);
  });

  it('changes the sync interval, moves the scheduler, and records set_sync_interval', async () => {
    const before = audit.events.length;
    const changed = await call('PATCH', `/api/connections/${id}`, { syncIntervalMinutes: 60 });
    expect(changed.status).toBe(200);
    expect(changed.json.connection.syncIntervalMinutes).toBe(60);
    expect((await scheduled()).get(id)).toBe(60 * 60_000);
    expect(audit.events.slice(before)).toEqual([
      expect.objectContaining({ agentId: 'operator', tool: 'set_sync_interval', sector: 'home', decision: 'allow', outcome: 'ok', args: { connectionId: id, syncIntervalMinutes: 60 } }),
    ]);
  });

  it('queues a manual sync', async () => {
    const queued = await call('POST', `/api/connections/${id}/sync`);
    expect(queued.status).toBe(202);
    expect((await queue.getJob(queued.json.jobId))?.data).toEqual({ connectionId: id, reason: 'manual' });
  });

  it('pauses (no scheduler, no manual sync) and resumes (scheduler back)', async () => {
    expect((await call('POST', `/api/connections/${id}/pause`)).json.connection).toMatchObject({ status: 'paused', health: 'paused' });
    expect((await scheduled()).has(id)).toBe(false);
    expect((await call('POST', `/api/connections/${id}/sync`)).status).toBe(409);
    expect((await call('POST', `/api/connections/${id}/resume`)).json.connection.status).toBe('active');
    expect((await scheduled()).get(id)).toBe(60 * 60_000);
  });

  it('takes a new token, which reactivates a connection that needed sign-in', async () => {
    await testEnv.db.query(sql.unsafe`UPDATE connections SET status = 'needs_sign_in', last_error = 'refused' WHERE id = ${id}::uuid`);
    const updated = await call('PATCH', `/api/connections/${id}`, { credentials: { baseUrl: 'http://hub.lan:8123', token: 'new-token' } });
    expect(updated.json.connection).toMatchObject({ status: 'active', lastError: null });
    expect(updated.text).not.toContain('new-token');
  });

  it('has no ingest secret to rotate', async () => {
    expect((await call('POST', `/api/connections/${id}/rotate-secret`)).status).toBe(409);
  });

  it('deletes the connection with its cache and scheduler', async () => {
    await testEnv.db.query(sql.unsafe`
      INSERT INTO home_entities (connection_id, source, source_id, entity_id, domain) VALUES (${id}::uuid, 'home-assistant', 'light.a', 'light.a', 'light')`);
    const signInId = (await call('GET', '/api/connections')).json.connections.find((c: { id: string }) => c.id === id).signInId as string;
    expect((await call('DELETE', `/api/connections/${id}`)).status).toBe(204);
    expect(await testEnv.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM home_entities WHERE connection_id = ${id}::uuid`)).toBe(0);
    // Its only connection gone, the sign-in and its sealed credentials go too.
    expect(await testEnv.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM sign_ins WHERE id = ${signInId}::uuid`)).toBe(0);
    expect((await scheduled()).has(id)).toBe(false);
    expect((await call('DELETE', `/api/connections/${id}`)).status).toBe(404);
    expect((await call('POST', '/api/connections/not-an-id/pause')).status).toBe(400);
  });
});

describe('connecting the phone', () => {
  it('returns the push secret once, with where to push; it has no interval and nothing to sync', async () => {
    const created = await call('POST', '/api/connections', { provider: 'health-auto-export', displayName: 'My phone' });
    expect(created.status).toBe(201);
    const { connection, ingestSecret } = created.json;
    expect(ingestSecret).toMatch(/^pcgis_[A-Za-z0-9_-]{43}$/);
    expect(connection).toMatchObject({ sector: 'health', signIn: 'push', syncIntervalMinutes: null, ingestPath: `/api/ingest/${connection.id}`, hasIngestSecret: true });
    expect((await call('GET', '/api/connections')).text).not.toContain(ingestSecret);
    expect((await scheduled()).has(connection.id)).toBe(false);
    expect((await call('POST', `/api/connections/${connection.id}/sync`)).status).toBe(409);
    const before = audit.events.length;
    expect((await call('PATCH', `/api/connections/${connection.id}`, { syncIntervalMinutes: 5 })).status).toBe(409);
    expect(audit.events.slice(before)).toEqual([expect.objectContaining({ tool: 'set_sync_interval', outcome: 'error', sector: 'health' })]);
    const rotated = await call('POST', `/api/connections/${connection.id}/rotate-secret`);
    expect(rotated.json.ingestSecret).not.toBe(ingestSecret);
  });
});

describe('connecting iCloud', () => {
  it('one Apple ID and app-specific password make the calendar, contacts and mail connections, each scheduled, on one sign-in', async () => {
    const password = 'abcd-efgh-ijkl-mnop';
    const created = await call('POST', '/api/connections', { provider: 'icloud', credentials: { appleId: 'person@icloud.com', appPassword: password } });
    expect(created.status).toBe(201);
    const made = created.json.connections as Array<{ id: string; sector: string; signInId: string }>;
    expect(made.map((connection) => connection.sector).sort()).toEqual(['calendar', 'contacts', 'mail']);
    expect(new Set(made.map((connection) => connection.signInId)).size).toBe(1);
    const schedules = await scheduled();
    for (const connection of made) expect(schedules.get(connection.id)).toBe(15 * 60_000);
    expect(created.text).not.toContain(password);
  });
});

describe('the iCloud Mail address', () => {
  const key = randomBytes(32);
  let keyed: TestConsole;
  const password = 'abcd-efgh-ijkl-mnop';
  const keyedCall = (method: string, path: string, body?: unknown) => api(keyed.address, method, path, body);
  const stored = async (signInId: string) => {
    const sealed = await testEnv.db.oneFirst(sql.type(z.object({ credentials: z.instanceof(Buffer) }))`SELECT credentials FROM sign_ins WHERE id = ${signInId}::uuid`);
    return openCredentials(key, sealed, signInId);
  };
  beforeAll(async () => {
    keyed = await startTestConsole(testEnv, audit.recorder, { CREDENTIALS_KEY: key.toString('base64') });
  });
  afterAll(async () => keyed?.close());

  it('is an optional, labelled field of the iCloud form', async () => {
    const { providers } = (await keyedCall('GET', '/api/providers')).json as { providers: Array<{ kind: string; credentials: { properties: Record<string, { title?: string }>; required: string[] } }> };
    const icloud = providers.find((provider) => provider.kind === 'icloud');
    expect(icloud?.credentials.properties.mailAddress?.title).toBe('iCloud Mail address (optional)');
    expect(icloud?.credentials.required).toEqual(['appleId', 'appPassword']);
  });

  it('an existing iCloud connection gets it by replacing its credentials, which makes it active again; another domain is refused naming the field', async () => {
    const created = await keyedCall('POST', '/api/connections', { provider: 'icloud', credentials: { appleId: 'person@example.com', appPassword: password } });
    expect(created.status).toBe(201);
    const mail = (created.json.connections as Array<{ id: string; sector: string; signInId: string }>).find((connection) => connection.sector === 'mail');
    if (!mail) throw new Error('no mail connection');
    expect(await stored(mail.signInId)).toEqual({ appleId: 'person@example.com', appPassword: password });

    await testEnv.db.query(sql.unsafe`UPDATE connections SET status = 'needs_sign_in', last_error = 'iCloud Mail refused the Apple ID' WHERE id = ${mail.id}::uuid`);
    const refused = await keyedCall('PATCH', `/api/connections/${mail.id}`, { credentials: { appleId: 'person@example.com', appPassword: password, mailAddress: 'person@gmail.com' } });
    expect(refused.status).toBe(400);
    expect(refused.json.error).toContain("'credentials.mailAddress' must be your iCloud Mail address, ending @icloud.com, @me.com or @mac.com");
    expect(refused.text).not.toContain(password);

    const updated = await keyedCall('PATCH', `/api/connections/${mail.id}`, { credentials: { appleId: 'person@example.com', appPassword: password, mailAddress: ' Person@iCloud.com ' } });
    expect(updated.status).toBe(200);
    expect(updated.json.connection).toMatchObject({ status: 'active', lastError: null });
    expect(await stored(mail.signInId)).toEqual({ appleId: 'person@example.com', appPassword: password, mailAddress: 'person@icloud.com' });
  });
});

describe('Console acts and their audit rows (spec 2.3, 6)', () => {
  const SENTINEL = 'SENTINEL-credential-value';

  it('leaves one operator row per act, naming the act in snake_case, with no credential anywhere', async () => {
    const before = audit.events.length;
    const hub = await call('POST', '/api/connections', { provider: 'home-assistant', credentials: { baseUrl: 'http://hub.lan:8123', token: SENTINEL } });
    const id = hub.json.connection.id as string;
    await call('PATCH', `/api/connections/${id}`, { displayName: 'Hub', credentials: { baseUrl: 'http://hub.lan:8123', token: `${SENTINEL}-2` } });
    await call('POST', `/api/connections/${id}/sync`);
    await call('POST', `/api/connections/${id}/pause`);
    await call('POST', `/api/connections/${id}/resume`);
    const phone = await call('POST', '/api/connections', { provider: 'health-auto-export' });
    await call('POST', `/api/connections/${phone.json.connection.id}/rotate-secret`);
    await call('POST', `/api/connections/${id}/rotate-secret`);
    await call('DELETE', `/api/connections/${id}`);
    const rows = audit.events.slice(before);
    expect(rows.map((row) => [row.tool, row.outcome])).toEqual([
      [CONSOLE_ACTS.createConnection, 'ok'],
      [CONSOLE_ACTS.renameConnection, 'ok'],
      [CONSOLE_ACTS.replaceCredentials, 'ok'],
      [CONSOLE_ACTS.syncConnection, 'ok'],
      [CONSOLE_ACTS.pauseConnection, 'ok'],
      [CONSOLE_ACTS.resumeConnection, 'ok'],
      [CONSOLE_ACTS.createConnection, 'ok'],
      [CONSOLE_ACTS.rotateIngestSecret, 'ok'],
      [CONSOLE_ACTS.rotateIngestSecret, 'error'],
      [CONSOLE_ACTS.removeConnection, 'ok'],
    ]);
    expect(rows.every((row) => row.agentId === 'operator' && row.decision === 'allow' && /^[a-z]+(_[a-z]+)*$/.test(row.tool))).toBe(true);
    expect(rows[0]).toMatchObject({ sector: 'home', args: { provider: 'home-assistant' } });
    const secrets = [SENTINEL, phone.json.ingestSecret as string];
    const seen = `${JSON.stringify(rows)}\n${consoleService.logs().join('\n')}`;
    for (const secret of secrets) expect(seen).not.toContain(secret);
  });
});
