import { randomBytes } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { sql } from '../db/index.ts';
import { useTestEnvironment } from '@pcg/testkit/testing';
import { buildAuditRow } from './audit-fns.ts';
import { insertAuditRows } from './audit-queries.ts';
import { checkDescent, readChainStartBase, type DescentBase } from './audit-chain-descent.ts';
import { MICROSECOND_UTC, readChainHead, type ChainHead } from './audit-chain-queries.ts';
import type { QueuedAuditRow } from './audit-types.ts';

const testEnv = useTestEnvironment();
const key = randomBytes(32);

function rows(count: number, prefix: string): QueuedAuditRow[] {
  return Array.from({ length: count }, (_, index) =>
    buildAuditRow({ agentId: 'claude', tool: 'query', sector: 'finance', decision: 'allow', outcome: 'ok', args: { limit: index }, requestId: `${prefix}-${index}` }).row,
  );
}
const writeKeyed = (prefix: string, count = 3) => insertAuditRows(testEnv.db, rows(count, prefix), { key });
const writeUnkeyed = (prefix: string, count = 3) => insertAuditRows(testEnv.db, rows(count, prefix));
const idAt = (seq: number) => testEnv.db.oneFirst(sql.type(z.object({ id: z.number() }))`SELECT id FROM audit_log WHERE chain_seq = ${seq}`);
/** The head as the audit-writer anchors it: the base the next descent check starts from. */
const baseOf = (head: ChainHead, firstKeyedRow: number | null): DescentBase => ({ rows: head.seq, id: head.id, hash: head.hash, createdAt: head.createdAt, firstKeyedRow });

beforeEach(async () => {
  await testEnv.db.query(sql.unsafe`TRUNCATE audit_log`);
  await testEnv.db.query(sql.unsafe`
    UPDATE audit_chain SET start_id = NULL, start_created_at = NULL, legacy_rows = 0,
      head_seq = 0, head_id = NULL, head_created_at = NULL, head_hash = start_hash, first_hash = NULL`);
});

describe('the chain start as a descent base', () => {
  it('is place 0 at the seed hash, with no row before it', async () => {
    const seed = await testEnv.db.oneFirst(sql.type(z.object({ hash: z.string() }))`SELECT encode(start_hash, 'hex') AS hash FROM audit_chain`);
    expect(await readChainStartBase(testEnv.db)).toEqual({ rows: 0, id: null, hash: seed, createdAt: null, firstKeyedRow: null });
  });

  it('starts after the rows written before the chain', async () => {
    const old = await testEnv.db.one(sql.type(z.object({ id: z.number(), created_at: z.string() }))`
      INSERT INTO audit_log (user_id, tool, decision, outcome, request_id, created_at)
      VALUES (1, 'query', 'allow', 'ok', 'old', now() - interval '1 minute')
      RETURNING id, to_char(created_at AT TIME ZONE 'UTC', ${MICROSECOND_UTC}) AS created_at`);
    await testEnv.db.query(sql.unsafe`UPDATE audit_chain SET (start_id, start_created_at) = (SELECT id, created_at FROM audit_log WHERE id = ${old.id})`);
    expect(await readChainStartBase(testEnv.db)).toMatchObject({ rows: 0, id: old.id, createdAt: old.created_at });
    await writeKeyed('a');
    expect(await checkDescent(testEnv.db, key, await readChainStartBase(testEnv.db), await readChainHead(testEnv.db))).toEqual({ descends: true, firstKeyedRow: 1 });
  });
});

describe('checkDescent: does the head descend from the last anchored head?', () => {
  it('follows keyed rows from the start to the head, naming the first keyed row, across pages', async () => {
    await writeKeyed('a');
    await writeKeyed('b');
    const start = await readChainStartBase(testEnv.db);
    const head = await readChainHead(testEnv.db);
    expect(await checkDescent(testEnv.db, key, start, head)).toEqual({ descends: true, firstKeyedRow: 1 });
    expect(await checkDescent(testEnv.db, key, start, head, 2)).toEqual({ descends: true, firstKeyedRow: 1 });
  });

  it('reads on from an anchored head, keeping the first keyed row it recorded', async () => {
    await writeKeyed('a');
    const anchored = baseOf(await readChainHead(testEnv.db), 1);
    await writeKeyed('b');
    expect(await checkDescent(testEnv.db, key, anchored, await readChainHead(testEnv.db))).toEqual({ descends: true, firstKeyedRow: 1 });
  });

  it('accepts old, unkeyed rows only up to the first keyed row', async () => {
    await writeUnkeyed('old');
    await writeKeyed('new');
    const start = await readChainStartBase(testEnv.db);
    expect(await checkDescent(testEnv.db, key, start, await readChainHead(testEnv.db))).toEqual({ descends: true, firstKeyedRow: 4 });
    await writeUnkeyed('forged', 1);
    const forged = await idAt(7);
    expect(await checkDescent(testEnv.db, key, start, await readChainHead(testEnv.db))).toEqual({
      descends: false,
      detail: `row id ${forged} at place 7 does not carry the chain key's link`,
    });
    // From an anchor that already saw a keyed row, an unkeyed row right after it is refused too.
    expect(await checkDescent(testEnv.db, key, await baseAt(6, 4), await readChainHead(testEnv.db))).toEqual({
      descends: false,
      detail: `row id ${forged} at place 7 does not carry the chain key's link`,
    });
  });

  it('refuses rows linked under another key', async () => {
    await writeKeyed('a');
    expect(await checkDescent(testEnv.db, randomBytes(32), await readChainStartBase(testEnv.db), await readChainHead(testEnv.db))).toEqual({
      descends: false,
      detail: `row id ${await idAt(1)} at place 1 does not carry the chain key's link`,
    });
  });

  it('refuses a row edited after it was linked', async () => {
    await writeKeyed('a');
    await testEnv.db.query(sql.unsafe`UPDATE audit_log SET result_count = 9 WHERE chain_seq = 2`);
    expect(await checkDescent(testEnv.db, key, await readChainStartBase(testEnv.db), await readChainHead(testEnv.db))).toEqual({
      descends: false,
      detail: `row id ${await idAt(2)} at place 2 does not carry the chain key's link`,
    });
  });

  it('refuses an unkeyed row whose plain link does not match either', async () => {
    await writeUnkeyed('a');
    await testEnv.db.query(sql.unsafe`UPDATE audit_log SET row_hash = decode(${'ab'.repeat(32)}, 'hex') WHERE chain_seq = 1`);
    expect(await checkDescent(testEnv.db, key, await readChainStartBase(testEnv.db), await readChainHead(testEnv.db))).toEqual({
      descends: false,
      detail: `row id ${await idAt(1)} at place 1 does not carry the chain key's link`,
    });
  });

  it('refuses a row that stands where another place should, or carries no place', async () => {
    await writeKeyed('a');
    const start = await readChainStartBase(testEnv.db);
    const head = await readChainHead(testEnv.db);
    const third = await idAt(3);
    await testEnv.db.query(sql.unsafe`DELETE FROM audit_log WHERE chain_seq = 2`);
    expect(await checkDescent(testEnv.db, key, start, head)).toEqual({ descends: false, detail: `row id ${third} stands where place 2 should (it claims place 3)` });
    const unplaced = await testEnv.db.oneFirst(sql.type(z.object({ id: z.number() }))`
      INSERT INTO audit_log (user_id, tool, decision, outcome, request_id, created_at)
      SELECT 1, 'query', 'allow', 'ok', 'inserted', created_at - interval '1 microsecond' FROM audit_log WHERE chain_seq = 1
      RETURNING id`);
    expect(await checkDescent(testEnv.db, key, start, head)).toEqual({ descends: false, detail: `row id ${unplaced} stands where place 1 should (it claims place none)` });
  });

  it('refuses a row at its place that carries no link', async () => {
    await writeKeyed('a');
    const start = await readChainStartBase(testEnv.db);
    const head = await readChainHead(testEnv.db);
    const second = await idAt(2);
    await testEnv.db.query(sql.unsafe`UPDATE audit_log SET row_hash = NULL WHERE chain_seq = 2`);
    expect(await checkDescent(testEnv.db, key, start, head)).toEqual({ descends: false, detail: `row id ${second} stands where place 2 should (it claims place 2)` });
  });

  it('refuses a head the rows do not reach, or one whose place holds another row', async () => {
    await writeKeyed('a');
    const start = await readChainStartBase(testEnv.db);
    const head = await readChainHead(testEnv.db);
    expect(await checkDescent(testEnv.db, key, start, { ...head, seq: 5 })).toEqual({ descends: false, detail: 'the rows end at place 3, before the head\'s place 5' });
    expect(await checkDescent(testEnv.db, key, start, { ...head, hash: 'ab'.repeat(32) })).toEqual({ descends: false, detail: `place 3 holds row id ${head.id}, not the head's` });
    expect(await checkDescent(testEnv.db, key, start, { ...head, id: (head.id ?? 0) + 1000 })).toEqual({ descends: false, detail: `place 3 holds row id ${head.id}, not the head's` });
    expect(await checkDescent(testEnv.db, key, start, { ...head, seq: 2, hash: await hashAt(2), id: await idAt(2) })).toEqual({ descends: true, firstKeyedRow: 1 });
  });

  it('refuses a head cut back before the anchor, and compares a head at the anchor by its hash', async () => {
    await writeKeyed('a');
    const head = await readChainHead(testEnv.db);
    const anchored = baseOf(head, 1);
    expect(await checkDescent(testEnv.db, key, anchored, { ...head, seq: 2 })).toEqual({
      descends: false,
      detail: 'the head is at place 2, before the last anchored place 3: the chain was cut back',
    });
    expect(await checkDescent(testEnv.db, key, anchored, head)).toEqual({ descends: true, firstKeyedRow: 1 });
    expect(await checkDescent(testEnv.db, key, { ...anchored, firstKeyedRow: null }, head)).toEqual({ descends: true, firstKeyedRow: null });
    expect(await checkDescent(testEnv.db, key, anchored, { ...head, hash: 'cd'.repeat(32) })).toEqual({
      descends: false,
      detail: 'place 3 holds another row than the one last anchored',
    });
  });
});

async function hashAt(seq: number): Promise<string> {
  return testEnv.db.oneFirst(sql.type(z.object({ hash: z.string() }))`SELECT encode(row_hash, 'hex') AS hash FROM audit_log WHERE chain_seq = ${seq}`);
}

/** The base an anchor of the row at `seq` gives. */
async function baseAt(seq: number, firstKeyedRow: number | null): Promise<DescentBase> {
  const row = await testEnv.db.one(sql.type(z.object({ id: z.number(), hash: z.string(), created_at: z.string() }))`
    SELECT id, encode(row_hash, 'hex') AS hash, to_char(created_at AT TIME ZONE 'UTC', ${MICROSECOND_UTC}) AS created_at
    FROM audit_log WHERE chain_seq = ${seq}`);
  return { rows: seq, id: row.id, hash: row.hash, createdAt: row.created_at, firstKeyedRow };
}
