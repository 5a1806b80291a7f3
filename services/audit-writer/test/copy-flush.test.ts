import { randomBytes } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { AUDIT_QUEUE_KEY, pushAuditBatch, verifyAuditChain, type QueuedAuditRow } from '@pcg/shared/audit';
import { auditChainKeyId } from '@pcg/shared/crypto';
import { sql } from '@pcg/shared/db';
import { z } from 'zod';
import { createCapturingLogger, useTestEnvironment } from '@pcg/testkit/testing';
import { createAuditWriter } from '../src/writer.ts';

const testEnv = useTestEnvironment();
const HOUR = 3_600_000;
const KEY = randomBytes(32);

/** Rows whose every column is an edge of its type: nulls, text a COPY in text format would have to escape, wide characters, the int4 limit. */
const ROWS: QueuedAuditRow[] = [
  {
    userId: 1,
    agentId: null,
    tool: 'ingest',
    sector: null,
    decision: 'allow',
    denyReason: null,
    argsJson: '{}',
    resultCount: 0,
    outcome: 'ok',
    requestId: 'r-null-columns',
  },
  {
    userId: 1,
    agentId: 'tab\there\nnewline\\backslash \\N',
    tool: 'query',
    sector: 'finance',
    decision: 'deny',
    denyReason: "sector 'finance' is not granted\r\n",
    argsJson: JSON.stringify({ z: 'last', a: ['\\', '\t', '"quoted"', 'é', '😀'], n: -0.5, big: 1e21, nested: { b: null, a: true } }),
    resultCount: 2_147_483_647,
    outcome: 'error',
    requestId: 'r-escapes-ünïcödé-😀',
  },
  {
    userId: 1,
    agentId: 'claude',
    tool: 'get_record',
    sector: 'mail',
    decision: 'allow',
    denyReason: null,
    argsJson: JSON.stringify({ '10': 'index-like key', '2': 'another', id: 'm-1' }),
    resultCount: 1,
    outcome: 'ok',
    requestId: 'r-index-keys',
  },
];

const StoredRowSchema = z.object({
  user_id: z.number(),
  agent_id: z.string().nullable(),
  tool: z.string(),
  sector: z.string().nullable(),
  decision: z.string(),
  deny_reason: z.string().nullable(),
  args: z.unknown(),
  result_count: z.number(),
  outcome: z.string(),
  request_id: z.string(),
  chain_seq: z.number(),
  same_instant: z.boolean(),
});

beforeEach(async () => {
  await testEnv.redis.del(AUDIT_QUEUE_KEY);
  await testEnv.db.query(sql.unsafe`TRUNCATE audit_log`);
  await testEnv.db.query(sql.unsafe`
    UPDATE audit_chain SET start_id = NULL, start_created_at = NULL, legacy_rows = 0, head_seq = 0, head_id = NULL,
      head_created_at = NULL, head_hash = start_hash, first_hash = NULL, first_keyed_seq = NULL`);
});

describe("the writer's flush as one binary COPY (issue 44)", () => {
  it('stores every column as it was queued (nulls, tabs, newlines, backslashes, wide characters, the int4 limit) in spec 2.3 row shape, and the keyed chain verifies', async () => {
    await pushAuditBatch(testEnv.redis, { producerId: 'copy-test', firstSeq: 1, rows: ROWS.map((row) => JSON.stringify(row)), capacity: 100 });
    const writer = createAuditWriter({ db: testEnv.db, direct: testEnv.direct, redis: testEnv.redis, log: createCapturingLogger().log, flushMs: HOUR, chainKey: KEY });
    expect(await writer.flush()).toEqual({ taken: 3, written: 3, dropped: 0 });
    const stored = await testEnv.db.any(sql.type(StoredRowSchema)`
      SELECT user_id, agent_id, tool, sector, decision, deny_reason, args, result_count, outcome, request_id, chain_seq,
             created_at = (SELECT min(created_at) FROM audit_log) AS same_instant
      FROM audit_log ORDER BY id`);
    expect(stored).toEqual(
      ROWS.map((row, index) => ({
        user_id: row.userId,
        agent_id: row.agentId,
        tool: row.tool,
        sector: row.sector,
        decision: row.decision,
        deny_reason: row.denyReason,
        args: JSON.parse(row.argsJson),
        result_count: row.resultCount,
        outcome: row.outcome,
        request_id: row.requestId,
        chain_seq: index + 1,
        same_instant: true,
      })),
    );
    const report = await verifyAuditChain(testEnv.db, { key: { bytes: KEY, id: auditChainKeyId(KEY) } });
    expect(report).toMatchObject({ intact: true, firstKeyedRow: 1, headRows: 3 });
    expect(report.intactThrough.row).toBe(3);
  });

  it('writes nothing of a batch Postgres refuses midway through its COPY, leaves the head where it was, and counts the batch as dropped', async () => {
    // Valid JSON that jsonb refuses (a NUL escape): the server fails the COPY midway, after rows before it were sent.
    const bad = { ...ROWS[2]!, requestId: 'r-bad', argsJson: '{"a":"\\u0000"}' };
    await pushAuditBatch(testEnv.redis, { producerId: 'copy-bad', firstSeq: 1, rows: [ROWS[0]!, bad].map((row) => JSON.stringify(row)), capacity: 100 });
    const capture = createCapturingLogger();
    const writer = createAuditWriter({ db: testEnv.db, direct: testEnv.direct, redis: testEnv.redis, log: capture.log, flushMs: HOUR, chainKey: KEY });
    expect(await writer.flush()).toEqual({ taken: 2, written: 0, dropped: 2 });
    expect(await testEnv.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM audit_log`)).toBe(0);
    expect(await testEnv.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT head_seq::int AS n FROM audit_chain`)).toBe(0);
    // The connection the COPY failed on is not reused in a broken state: the next flush writes.
    await pushAuditBatch(testEnv.redis, { producerId: 'copy-bad', firstSeq: 3, rows: [JSON.stringify(ROWS[1]!)], capacity: 100 });
    expect(await writer.flush()).toEqual({ taken: 1, written: 1, dropped: 0 });
  });

  it('writes a batch of 2,500 rows (args put in canonical form a chunk at a time beside the writer) in queue order, and the keyed chain verifies', async () => {
    // Keys out of canonical order, as a producer of another version might send them: the links must cover the canonical form.
    const rows = Array.from({ length: 2_500 }, (_, index): QueuedAuditRow => ({ ...ROWS[2]!, requestId: `big-${index}`, argsJson: JSON.stringify({ zeta: index, alpha: { y: 1, b: [index] } }) }));
    await pushAuditBatch(testEnv.redis, { producerId: 'copy-big', firstSeq: 1, rows: rows.map((row) => JSON.stringify(row)), capacity: 10_000 });
    const writer = createAuditWriter({ db: testEnv.db, direct: testEnv.direct, redis: testEnv.redis, log: createCapturingLogger().log, flushMs: HOUR, chainKey: KEY });
    try {
      expect(await writer.flush()).toEqual({ taken: 2_500, written: 2_500, dropped: 0 });
    } finally {
      await writer.close();
    }
    const order = await testEnv.db.any(sql.type(z.object({ request_id: z.string(), chain_seq: z.number() }))`SELECT request_id, chain_seq FROM audit_log ORDER BY id`);
    expect(order).toEqual(rows.map((row, index) => ({ request_id: row.requestId, chain_seq: index + 1 })));
    const report = await verifyAuditChain(testEnv.db, { key: { bytes: KEY, id: auditChainKeyId(KEY) } });
    expect(report).toMatchObject({ intact: true, firstKeyedRow: 1, headRows: 2_500 });
    expect(report.intactThrough.row).toBe(2_500);
  });

  it('writes nothing of a 2,500-row batch whose last chunk holds args that are not JSON, after its first chunks were sent', async () => {
    const rows = Array.from({ length: 2_500 }, (_, index): QueuedAuditRow => ({ ...ROWS[0]!, requestId: `bad-${index}`, argsJson: index === 2_400 ? '{"not json' : '{}' }));
    await pushAuditBatch(testEnv.redis, { producerId: 'copy-big-bad', firstSeq: 1, rows: rows.map((row) => JSON.stringify(row)), capacity: 10_000 });
    const writer = createAuditWriter({ db: testEnv.db, direct: testEnv.direct, redis: testEnv.redis, log: createCapturingLogger().log, flushMs: HOUR, chainKey: KEY });
    try {
      expect(await writer.flush()).toEqual({ taken: 2_500, written: 0, dropped: 2_500 });
      expect(await testEnv.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM audit_log`)).toBe(0);
      await pushAuditBatch(testEnv.redis, { producerId: 'copy-big-bad', firstSeq: 2_501, rows: [JSON.stringify(ROWS[1]!)], capacity: 100 });
      expect(await writer.flush()).toEqual({ taken: 1, written: 1, dropped: 0 });
    } finally {
      await writer.close();
    }
  });
});
