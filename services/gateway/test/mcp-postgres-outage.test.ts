import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, type Database } from '@pcg/shared/db';
import { collectQueuedAuditRows, createTestAgent, takeQueuedAuditRows, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { startOwnPostgres, type OwnPostgres } from '../../../test/support/own-stores.ts';
import type { RunningGateway } from '../src/service.ts';
import { INITIALIZE, messageOf, rawInitialize, rawMcp, rpcError, startTestGateway } from './gateway-harness.ts';

// A gateway on a Postgres of this test's own, which the test stops and starts again (issue 12 item 14).
// Redis stays up: it is the shared one, under this file's prefix.
const testEnv = useTestEnvironment();
let postgres: OwnPostgres;
let database: Database;
let gateway: RunningGateway;
let key: string;

beforeAll(async () => {
  postgres = await startOwnPostgres();
  database = await createDatabase(postgres.databaseUrl);
  key = await createTestAgent(database.pool, { name: 'outage', sectors: ['finance'] });
  gateway = await startTestGateway(testEnv, { DATABASE_URL: postgres.databaseUrl });
}, 120_000);
afterAll(async () => {
  await gateway?.close();
  await database?.end();
  await postgres?.dispose();
});

const session = (id: string) => ({ 'mcp-session-id': id, authorization: `Bearer ${key}` });
const describeContext = (id: string, n: number) =>
  rawMcp(gateway.address, { headers: session(id), body: { jsonrpc: '2.0', id: n, method: 'tools/call', params: { name: 'describe_context', arguments: {} } } });
const toolResult = (text: string) => (messageOf(text) as { result: { isError?: boolean; content: Array<{ text: string }> } }).result;

describe('Postgres stops under a running gateway, then comes back', () => {
  it('answers initialize 503 -32000 with Retry-After and no refusal row, keeps open sessions as tool errors, and recovers without a restart', async () => {
    const open = await rawInitialize(gateway.address, key);
    expect(toolResult((await describeContext(open, 1)).text).isError).toBeFalsy();
    await takeQueuedAuditRows(testEnv.redis);

    await postgres.stop();

    const refused = await rawMcp(gateway.address, { headers: { authorization: `Bearer ${key}` }, body: INITIALIZE });
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(refused.headers.get('www-authenticate')).toBeNull();
    expect(refused.json()).toEqual(rpcError(-32000, 'Service unavailable; try again shortly', 1));

    // A tool call on the open session: an answer, a tool error with the gateway's own message, no 5xx.
    const during = await describeContext(open, 2);
    expect(during.status).toBe(200);
    const failed = toolResult(during.text);
    expect(failed.isError).toBe(true);
    expect(failed.content[0]?.text).toBe('describe_context failed; try again later');
    // The session is not broken.
    expect((await rawMcp(gateway.address, { headers: session(open), body: { jsonrpc: '2.0', id: 3, method: 'tools/list' } })).status).toBe(200);

    // The outage left no initialize refusal row (a 401 and a row would say the key was refused).
    // The row is spooled before the answer and reaches Redis a moment later (design 8.4): wait for it.
    const rows = await collectQueuedAuditRows(testEnv.redis, 1);
    expect(rows.filter((row) => row.tool === 'initialize')).toEqual([]);
    expect(rows).toMatchObject([{ tool: 'describe_context', decision: 'allow', outcome: 'error' }]);

    await postgres.start();

    // Recovery with no restart: a new session opens, and the old one answers again.
    const reopened = await waitFor(async () => {
      const answer = await rawMcp(gateway.address, { headers: { authorization: `Bearer ${key}` }, body: INITIALIZE });
      return answer.status === 200 ? answer : undefined;
    }, 30_000, 'initialize to succeed again');
    expect(reopened.headers.get('mcp-session-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(toolResult((await describeContext(open, 4)).text).isError).toBeFalsy();
  }, 120_000);
});
