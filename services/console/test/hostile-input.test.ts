import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AUDIT_QUERY_ERRORS } from '@pcg/shared/audit';
import { sql } from '@pcg/shared/db';
import { useTestEnvironment } from '@pcg/testkit/testing';
import { PG_VALUE_RULES } from '@pcg/shared/validation';
import { api, collectingAudit, startTestConsole, type TestConsole } from './helpers.ts';

/** Issue 12 item 6: text Postgres cannot hold is a 400 naming the field, never a 500, and nothing stored is lost. */
const testEnv = useTestEnvironment();
const audit = collectingAudit();
let consoleService: TestConsole;
const call = (method: string, path: string, body?: unknown) => api(consoleService.address, method, path, body);

const BAD_TEXTS: Array<[string, string]> = [
  ['a NUL', 'fin\u0000ance'],
  ['a lone surrogate', 'fin\ud800ance'],
];

const agentRow = (name: string) =>
  testEnv.db.maybeOne(sql.type(z.object({ sectors: z.array(z.string()) }))`SELECT sectors FROM agents WHERE name = ${name}`);

beforeAll(async () => {
  consoleService = await startTestConsole(testEnv, audit.recorder);
});
afterAll(async () => consoleService?.close());

describe('agent sectors', () => {
  beforeAll(async () => {
    expect((await call('POST', '/api/agents', { name: 'kept', sectors: ['health'] })).status).toBe(201);
  });

  it.each(BAD_TEXTS)('POST /api/agents with %s in a sector is a 400 naming the sector, and creates nothing', async (_what, sector) => {
    const answer = await call('POST', '/api/agents', { name: 'hostile', sectors: ['home', sector] });
    expect(answer.status).toBe(400);
    expect(answer.json).toEqual({ error: `invalid body: 'sectors.1' ${PG_VALUE_RULES.text}`, code: 'validation_failed' });
    expect(await agentRow('hostile')).toBeNull();
  });

  it.each(BAD_TEXTS)('PATCH /api/agents/<name> with %s in a sector is a 400 naming the sector, and changes nothing', async (_what, sector) => {
    const answer = await call('PATCH', '/api/agents/kept', { sectors: [sector] });
    expect(answer.status).toBe(400);
    expect(answer.json).toEqual({ error: `invalid body: 'sectors.0' ${PG_VALUE_RULES.text}`, code: 'validation_failed' });
    expect(await agentRow('kept')).toEqual({ sectors: ['health'] });
  });
});

describe('connection display names', () => {
  let id: string;
  const displayName = () =>
    testEnv.db.oneFirst(sql.type(z.object({ display_name: z.string() }))`SELECT display_name FROM connections WHERE id = ${id}::uuid`);

  beforeAll(async () => {
    const created = await call('POST', '/api/connections', { provider: 'health-auto-export', displayName: 'Phone' });
    expect(created.status).toBe(201);
    id = created.json.connection.id;
  });

  it.each(BAD_TEXTS)('POST /api/connections with %s in displayName is a 400 naming it, and creates nothing', async (_what, name) => {
    const count = () => testEnv.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM connections`);
    const before = await count();
    const answer = await call('POST', '/api/connections', { provider: 'health-auto-export', displayName: name });
    expect(answer.status).toBe(400);
    expect(answer.json).toEqual({ error: `invalid body: 'displayName' ${PG_VALUE_RULES.text}`, code: 'validation_failed' });
    expect(await count()).toBe(before);
  });

  it.each(BAD_TEXTS)('PATCH /api/connections/<id> with %s in displayName is a 400 naming it, and keeps the old name', async (_what, name) => {
    const answer = await call('PATCH', `/api/connections/${id}`, { displayName: name });
    expect(answer.status).toBe(400);
    expect(answer.json).toEqual({ error: `invalid body: 'displayName' ${PG_VALUE_RULES.text}`, code: 'validation_failed' });
    expect(await displayName()).toBe('Phone');
  });
});

describe('GET /api/audit filters', () => {
  it.each(['agent', 'tool', 'sector'])('answers %s=%00 with a 400 naming the parameter', async (name) => {
    const answer = await call('GET', `/api/audit?${name}=a%00b`);
    expect(answer.status).toBe(400);
    expect(answer.json).toEqual({ error: AUDIT_QUERY_ERRORS.text(name), code: 'validation_failed' });
  });

  it("keeps spec 4.5's exact cursor message for a NUL in 'before'", async () => {
    const answer = await call('GET', '/api/audit?before=%00');
    expect(answer.status).toBe(400);
    expect(answer.json.error).toBe("invalid 'before' cursor: echo the previous page's x-gateway-audit-next header value unmodified");
  });

  it('still serves a clean filter', async () => {
    const answer = await call('GET', '/api/audit?agent=kept');
    expect(answer.status).toBe(200);
    expect(answer.json).toEqual([]);
  });
});
