import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  AUDIT_QUEUE_KEY,
  createAuditProducer,
  insertAuditRows,
  readAuditDrops,
  takeAuditBatch,
  QueuedAuditRowSchema,
  type AuditEvent,
  type AuditProducer,
} from '@pcg/shared/audit';
import { loadConfig } from '@pcg/shared/config';
import { sql } from '@pcg/shared/db';
import { createCapturingLogger, useTestEnvironment } from '@pcg/testkit/testing';
import { buildApp } from '../src/app.ts';
import { consoleConfigSchema } from '../src/config.ts';

/** Spec 4.5's message for a bad `before`, word for word (spec 7: bad `before` gives 400, see 4.5). */
const BEFORE_REFUSED = "invalid 'before' cursor: echo the previous page's x-gateway-audit-next header value unmodified";
const testEnv = useTestEnvironment();
let app: FastifyInstance;
let producer: AuditProducer;

const WIRE_KEYS = ['agent_id', 'args', 'created_at', 'decision', 'deny_reason', 'id', 'outcome', 'request_id', 'result_count', 'sector', 'tool'];

type WireRow = { id: string; agent_id: string | null; tool: string; sector: string | null; decision: string; created_at: string; request_id: string };

async function get(query = '') {
  const response = await app.inject({ method: 'GET', url: `/api/audit${query}` });
  return {
    status: response.statusCode,
    body: response.json() as unknown,
    rows: response.statusCode === 200 ? (response.json() as WireRow[]) : [],
    hasMore: response.headers['x-gateway-audit-has-more'],
    next: response.headers['x-gateway-audit-next'] as string | undefined,
  };
}

/** Queues events through the real producer and writes them as one flush (the writer's own statement). */
async function flush(events: AuditEvent[]): Promise<void> {
  for (const event of events) producer.record(event);
  await producer.drain();
  const entries = await takeAuditBatch(testEnv.redis, 100_000);
  await insertAuditRows(testEnv.db, entries.map((entry) => QueuedAuditRowSchema.parse(JSON.parse(entry))));
}

const ev = (overrides: Partial<AuditEvent> = {}): AuditEvent => ({
  agentId: 'claude',
  tool: 'query',
  sector: 'finance',
  decision: 'allow',
  outcome: 'ok',
  ...overrides,
});

const dbOrder = () =>
  testEnv.db.anyFirst(sql.type(z.object({ id: z.string() }))`SELECT id::text AS id FROM audit_log ORDER BY created_at DESC, audit_log.id DESC`);

beforeAll(async () => {
  const config = loadConfig(consoleConfigSchema, testEnv.env({ REST_PORT: '0' }));
  app = buildApp({ config, log: createCapturingLogger('console').log, db: testEnv.db, direct: testEnv.direct, redis: testEnv.redis });
  await app.ready();
  producer = createAuditProducer({ redis: testEnv.redis, settings: { AUDIT_QUEUE_CAPACITY: 100_000 }, log: createCapturingLogger().log });
});
afterAll(async () => app.close());

describe('paging 2,500 rows written in three flushes', () => {
  beforeAll(async () => {
    await testEnv.db.query(sql.unsafe`TRUNCATE audit_log`);
    for (const [start, count] of [[0, 900], [900, 1000], [1900, 600]] as const) {
      await flush(Array.from({ length: count }, (_, index) => ev({ requestId: `r-${start + index}` })));
    }
  });

  it('returns every row exactly once, newest first, with has-more on every page and next only when more', async () => {
    const seen: string[] = [];
    let before: string | undefined;
    for (let page = 1; page <= 25; page += 1) {
      const answer = await get(`?limit=100${before ? `&before=${encodeURIComponent(before)}` : ''}`);
      expect(answer.status).toBe(200);
      expect(answer.rows).toHaveLength(100);
      expect(answer.hasMore).toBe(page < 25 ? 'true' : 'false');
      if (page < 25) expect(answer.next).toEqual(expect.any(String));
      else expect(answer.next).toBeUndefined();
      seen.push(...answer.rows.map((row) => row.id));
      before = answer.next;
    }
    expect(new Set(seen).size).toBe(2500);
    expect(seen).toEqual(await dbOrder());
    // Newest first: the last flush's last row leads, the first flush's first row ends.
    const first = await get('?limit=1');
    expect(first.rows[0]?.request_id).toBe('r-2499');
  });

  it('serves the row shape of spec 2.3 without user_id', async () => {
    const { rows } = await get('?limit=1');
    const row = rows[0] as unknown as Record<string, unknown>;
    expect(Object.keys(row).sort()).toEqual(WIRE_KEYS);
    expect(row).toMatchObject({ agent_id: 'claude', tool: 'query', sector: 'finance', decision: 'allow', deny_reason: null, args: {}, result_count: 0, outcome: 'ok' });
    expect(row.id).toMatch(/^\d+$/);
    expect(row.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  it('refuses a cursor changed by any one character with the exact message of spec 4.5', async () => {
    const { next } = await get('?limit=100');
    const cursor = next ?? '';
    expect(cursor.length).toBeGreaterThan(20);
    for (let position = 0; position < cursor.length; position += 1) {
      const original = cursor[position];
      const changed = `${cursor.slice(0, position)}${original === 'A' ? 'B' : 'A'}${cursor.slice(position + 1)}`;
      const answer = await get(`?before=${encodeURIComponent(changed)}`);
      expect(answer.status, `cursor changed at ${position}`).toBe(400);
      expect(answer.body).toMatchObject({ error: BEFORE_REFUSED });
    }
  });

  it.each([
    ['empty', ''],
    ['made up', 'abc'],
    ['a rebuilt payload with no signature', Buffer.from(JSON.stringify({ t: '2026-03-01T00:00:00.000000Z', i: '5' })).toString('base64url')],
    ['a truncated cursor', 'SIGNED'],
  ])('refuses a %s cursor with 400', async (_name, value) => {
    const cursor = value === 'SIGNED' ? ((await get('?limit=5')).next ?? '').slice(0, -1) : value;
    const answer = await get(`?before=${encodeURIComponent(cursor)}`);
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ error: BEFORE_REFUSED, code: 'validation_failed' });
  });

  it('refuses a cursor given twice', async () => {
    const { next = '' } = await get('?limit=5');
    const answer = await get(`?before=${encodeURIComponent(next)}&before=${encodeURIComponent(next)}`);
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ error: BEFORE_REFUSED });
  });

  it('accepts a cursor again after the Console restarts (the key is kept in settings)', async () => {
    const { next = '' } = await get('?limit=5');
    const restarted = buildApp({ config: loadConfig(consoleConfigSchema, testEnv.env()), log: createCapturingLogger().log, db: testEnv.db, direct: testEnv.direct, redis: testEnv.redis });
    try {
      const response = await restarted.inject({ method: 'GET', url: `/api/audit?limit=5&before=${encodeURIComponent(next)}` });
      expect(response.statusCode).toBe(200);
      expect((response.json() as WireRow[])[0]?.request_id).toBe('r-2494');
    } finally {
      await restarted.close();
    }
  });

  it.each([
    ['', 100],
    ['?limit=1', 1],
    ['?limit=007', 7],
    ['?limit=1000', 1000],
    ['?limit=1001', 1000],
    ['?limit=99999999999999999999999', 1000],
  ])('limit %s gives %i rows', async (query, count) => {
    const answer = await get(query);
    expect(answer.status).toBe(200);
    expect(answer.rows).toHaveLength(count);
    expect(answer.hasMore).toBe('true');
  });

  it.each(['0', '-1', '1.5', '10.0', '1e2', '+5', ' 5', 'abc', '', '0x10'])('refuses limit=%j with the exact message', async (value) => {
    const answer = await get(`?limit=${encodeURIComponent(value)}`);
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ error: "invalid 'limit'", code: 'validation_failed' });
  });

  it('refuses a limit given twice', async () => {
    const answer = await get('?limit=1&limit=2');
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ error: "invalid 'limit'" });
  });
});

describe('filters', () => {
  beforeAll(async () => {
    await testEnv.db.query(sql.unsafe`TRUNCATE audit_log`);
    await flush([
      ev({ requestId: 'a1' }),
      ev({ requestId: 'a2', agentId: 'claude2', sector: 'health' }),
      ev({ requestId: 'a3', agentId: 'Claude', tool: 'get_record' }),
      ev({ requestId: 'a4', tool: 'describe_context', sector: null }),
      ev({ requestId: 'a5', decision: 'deny', denyReason: 'sector not granted', sector: 'mail', outcome: 'error' }),
      ev({ requestId: 'a6', agentId: null, tool: 'initialize', decision: 'deny', denyReason: 'access denied: unknown agent', sector: null, outcome: 'error' }),
      ev({ requestId: 'a7', sector: 'travel' }),
      ev({ requestId: 'a8', agentId: 'operator', tool: 'export', sector: 'finance' }),
    ]);
    // Fixed instants, microseconds apart, for the since rules.
    await testEnv.db.query(sql.unsafe`
      UPDATE audit_log SET created_at = '2026-03-01T10:00:00.000500Z'::timestamptz + (substr(request_id, 2)::int - 1) * interval '1 day'`);
  });

  const ids = async (query: string) => {
    const answer = await get(query);
    expect(answer.status).toBe(200);
    expect(answer.hasMore).toBe('false');
    return answer.rows.map((row) => row.request_id);
  };

  it('matches agent, tool and decision exactly', async () => {
    expect(await ids('?agent=claude')).toEqual(['a7', 'a5', 'a4', 'a1']);
    expect(await ids('?agent=operator')).toEqual(['a8']);
    expect(await ids('?tool=get_record')).toEqual(['a3']);
    expect(await ids('?tool=get')).toEqual([]);
    expect(await ids('?decision=deny')).toEqual(['a6', 'a5']);
    expect(await ids('?decision=allow')).toEqual(['a8', 'a7', 'a4', 'a3', 'a2', 'a1']);
    expect(await ids('?agent=claude&decision=deny&tool=query')).toEqual(['a5']);
  });

  it('matches sector exactly, leaves out null-sector rows and does not check the name against the six', async () => {
    expect(await ids('?sector=finance')).toEqual(['a8', 'a3', 'a1']);
    expect(await ids('?sector=travel')).toEqual(['a7']);
    expect(await ids('?sector=nowhere')).toEqual([]);
    expect((await ids('')).length).toBe(8);
  });

  it.each(['maybe', 'ALLOW', ''])('refuses decision=%j with 400', async (value) => {
    const answer = await get(`?decision=${value}`);
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ error: "invalid 'decision': expected 'allow' or 'deny'", code: 'validation_failed' });
  });

  it.each([
    ['2026-03-03', ['a8', 'a7', 'a6', 'a5', 'a4', 'a3']],
    ['2026-03-03T10:00:00.0005Z', ['a8', 'a7', 'a6', 'a5', 'a4', 'a3']],
    ['2026-03-03T10:00:00.000501Z', ['a8', 'a7', 'a6', 'a5', 'a4']],
    ['2026-03-03T12:00:00+02:00', ['a8', 'a7', 'a6', 'a5', 'a4', 'a3']],
    ['2026-03-03T10:00', ['a8', 'a7', 'a6', 'a5', 'a4', 'a3']],
    ['2026-03-03T10:01', ['a8', 'a7', 'a6', 'a5', 'a4']],
    ['2026-03-08T10:00:00.000Z', ['a8']],
    ['2030-01-01T00:00:00Z', []],
  ])('since=%s gives rows at or after it', async (since, expected) => {
    expect(await ids(`?since=${encodeURIComponent(since)}`)).toEqual(expected);
  });

  it.each(['yesterday', '2026-02-30', '2026-13-01', '2026-03-01T25:00Z', '2026-03-01T10:00:00+25:00', '1772359200000', 'March 1, 2026', ''])(
    'refuses since=%j with 400',
    async (since) => {
      const answer = await get(`?since=${encodeURIComponent(since)}`);
      expect(answer.status).toBe(400);
      expect(answer.body).toEqual({ error: "invalid 'since': expected an ISO 8601 timestamp such as 2026-03-01T00:00:00Z", code: 'validation_failed' });
    },
  );

  it('pages a filtered query exactly', async () => {
    const first = await get('?agent=claude&limit=2');
    expect(first.rows.map((row) => row.request_id)).toEqual(['a7', 'a5']);
    expect(first.hasMore).toBe('true');
    const second = await get(`?agent=claude&limit=2&before=${encodeURIComponent(first.next ?? '')}`);
    expect(second.rows.map((row) => row.request_id)).toEqual(['a4', 'a1']);
    expect(second.hasMore).toBe('false');
    expect(second.next).toBeUndefined();
  });

  it('answers an empty ledger with [] and has-more false', async () => {
    const answer = await get('?agent=nobody');
    expect(answer.body).toEqual([]);
    expect(answer.hasMore).toBe('false');
  });
});

describe('a full queue', () => {
  beforeEach(async () => {
    await testEnv.redis.del(AUDIT_QUEUE_KEY);
    await testEnv.db.query(sql.unsafe`TRUNCATE audit_drops`);
  });

  it('drops with the exact log line, counts the drop, and the Console keeps answering', async () => {
    const { log, lines } = createCapturingLogger();
    const tiny = createAuditProducer({ redis: testEnv.redis, db: testEnv.db, settings: { AUDIT_QUEUE_CAPACITY: 2 }, log });
    for (let index = 0; index < 5; index += 1) tiny.record(ev({ requestId: `o-${index}` }));
    await tiny.drain();
    expect(lines().filter((line) => (JSON.parse(line) as { msg: string }).msg === '[audit] queue overflow — dropped')).toHaveLength(3);
    expect((await readAuditDrops(testEnv.db)).queueOverflow).toBe(3);
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    expect((await get('?limit=1')).status).toBe(200);
  });
});
