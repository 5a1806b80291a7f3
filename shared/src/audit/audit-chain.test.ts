import fc from 'fast-check';
import { beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { sql } from '../db/index.ts';
import { useTestEnvironment } from '@pcg/testkit/testing';
import { buildAuditRow } from './audit-fns.ts';
import { insertAuditRows, selectAuditRows } from './audit-queries.ts';
import { insertChainedAuditRows, MICROSECOND_UTC, readChainHead } from './audit-chain-queries.ts';
import { verifyAuditChain } from './audit-chain-verify.ts';
import { walkLedger } from './audit-chain-walk.ts';
import type { AuditAnchor } from './audit-anchor.ts';
import type { QueuedAuditRow } from './audit-types.ts';

const testEnv = useTestEnvironment();

function rows(count: number, prefix: string, userId = 1): QueuedAuditRow[] {
  return Array.from({ length: count }, (_, index) => ({
    ...buildAuditRow({
      agentId: 'claude',
      tool: 'query',
      sector: 'finance',
      decision: 'allow',
      outcome: 'ok',
      args: { object: 'finance.transactions', limit: index, where: [{ field: 'amount', op: 'lt', value: -2.5 }], zeta: 'z', alpha: 'a' },
      requestId: `${prefix}-${index}`,
    }).row,
    userId,
  }));
}

/** Three flushes of 4 rows: places 1-4, 5-8 and 9-12, each flush with its own created_at. */
async function writeThreeFlushes(): Promise<void> {
  for (const prefix of ['a', 'b', 'c']) await insertAuditRows(testEnv.db, rows(4, prefix));
}

const idAt = (seq: number) => testEnv.db.oneFirst(sql.type(z.object({ id: z.number() }))`SELECT id FROM audit_log WHERE chain_seq = ${seq}`);

async function anchorNow(): Promise<AuditAnchor> {
  const head = await readChainHead(testEnv.db);
  return { rows: head.seq, id: head.id, hash: head.hash, createdAt: head.createdAt, writtenAt: new Date().toISOString() };
}

beforeEach(async () => {
  await testEnv.db.query(sql.unsafe`TRUNCATE audit_log`);
  await testEnv.db.query(sql.unsafe`
    UPDATE audit_chain SET start_id = NULL, start_created_at = NULL, legacy_rows = 0,
      head_seq = 0, head_id = NULL, head_created_at = NULL, head_hash = start_hash`);
});

describe('the hash chain as written', () => {
  it('is intact over several flushes, every row reported as not yet anchored', async () => {
    await writeThreeFlushes();
    const report = await verifyAuditChain(testEnv.db);
    expect(report).toMatchObject({ intact: true, break: null, intactThrough: { row: 12, id: await idAt(12) }, headRows: 12, unanchoredRows: 12, checkedRows: 12 });
  });

  it('reads across keyset pages smaller than a flush', async () => {
    await writeThreeFlushes();
    expect(await verifyAuditChain(testEnv.db, { pageSize: 3 })).toMatchObject({ intact: true, intactThrough: { row: 12 } });
  });

  it('is not broken by a flush that failed: a lost batch is a counted drop, not a hole', async () => {
    await insertAuditRows(testEnv.db, rows(3, 'a'));
    const failed = testEnv.db.transaction(async (tx) => {
      await insertChainedAuditRows(tx, rows(3, 'lost'));
      throw new Error('the flush failed after its INSERT');
    });
    await expect(failed).rejects.toThrow('the flush failed');
    await insertAuditRows(testEnv.db, rows(3, 'b'));
    const ids = await testEnv.db.anyFirst(sql.type(z.object({ id: z.number() }))`SELECT id FROM audit_log ORDER BY id`);
    expect(ids[3]! - ids[2]!).toBe(4); // the lost batch's ids are a gap
    expect(await verifyAuditChain(testEnv.db)).toMatchObject({ intact: true, intactThrough: { row: 6 } });
  });

  it('writes nothing for an empty batch and gives back the head unchanged', async () => {
    await writeThreeFlushes();
    const head = await readChainHead(testEnv.db);
    expect(await testEnv.db.transaction((tx) => insertChainedAuditRows(tx, []))).toEqual({ written: 0, head });
    expect(await readChainHead(testEnv.db)).toEqual(head);
  });

  it('resolves to the rows written and the new head, and gives the chain its id at its first row only', async () => {
    const empty = await readChainHead(testEnv.db);
    const first = await testEnv.db.transaction((tx) => insertChainedAuditRows(tx, rows(3, 'a')));
    const afterFirst = await readChainHead(testEnv.db);
    expect(first).toEqual({ written: 3, head: afterFirst });
    expect(afterFirst).toMatchObject({ seq: 3, id: await idAt(3) });
    expect(afterFirst.chainId).not.toBe(empty.chainId);
    await insertAuditRows(testEnv.db, rows(2, 'b'));
    expect(await readChainHead(testEnv.db)).toMatchObject({ seq: 5, chainId: afterFirst.chainId });
  });

  it('chains two flushes at once one after the other: the second waits for the first to commit', async () => {
    let release = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    let firstWritten = () => {};
    const written = new Promise<void>((resolve) => (firstWritten = resolve));
    const first = testEnv.db.transaction(async (tx) => {
      await insertChainedAuditRows(tx, rows(3, 'first'));
      firstWritten();
      await released;
    });
    // A first flush that fails fails the test at once.
    await Promise.race([written, first]);
    let secondSettled = false;
    const second = insertAuditRows(testEnv.db, rows(3, 'second')).finally(() => (secondSettled = true));
    // The first commits once the second waits on a lock (the head's), or has ended without waiting.
    const waiting = () => testEnv.db.oneFirst(sql.type(z.object({ count: z.number() }))`
      SELECT count(*)::int AS count FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`);
    while (!secondSettled && (await waiting()) === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    release();
    await Promise.all([first, second]);
    expect(await verifyAuditChain(testEnv.db)).toMatchObject({ intact: true, intactThrough: { row: 6 } });
  });

  it("reads a user id's rows a page at a time, asking for the next page only after a full one", async () => {
    await insertAuditRows(testEnv.db, rows(4, 'a'));
    let queries = 0;
    const counting: typeof testEnv.db = { ...testEnv.db, any: (query) => ((queries += 1), testEnv.db.any(query)) };
    const places: Array<number | null> = [];
    for await (const row of walkLedger(counting, null, 3)) places.push(row.seq);
    expect(places).toEqual([1, 2, 3, 4]);
    // The user ids, a full page of 3 (so the next is asked for), then a page of 1 (so no other).
    expect(queries).toBe(3);
  });

  it('covers rows of every user id, merged in the ledger order', async () => {
    await insertAuditRows(testEnv.db, [...rows(2, 'mine'), ...rows(2, 'theirs', 2), ...rows(1, 'mine-again')]);
    await insertAuditRows(testEnv.db, rows(2, 'theirs-later', 2));
    expect(await verifyAuditChain(testEnv.db, { pageSize: 2 })).toMatchObject({ intact: true, intactThrough: { row: 7 } });
  });

  it('starts after the rows written before it, which it counts but does not cover', async () => {
    await testEnv.db.query(sql.unsafe`
      INSERT INTO audit_log (user_id, tool, decision, outcome, request_id, created_at)
      VALUES (1, 'query', 'allow', 'ok', 'old-1', now() - interval '2 minutes'), (1, 'query', 'allow', 'ok', 'old-2', now() - interval '1 minute')`);
    // What the migration records for a table that already had rows.
    await testEnv.db.query(sql.unsafe`
      UPDATE audit_chain SET (start_id, start_created_at, head_id, head_created_at) =
        (SELECT id, created_at, id, created_at FROM audit_log ORDER BY created_at DESC, id DESC LIMIT 1),
        legacy_rows = 2`);
    await writeThreeFlushes();
    expect(await verifyAuditChain(testEnv.db)).toMatchObject({ intact: true, intactThrough: { row: 12 }, rowsBeforeChain: 2, checkedRows: 12 });
  });

  it('verifies any JSON args after their round trip through jsonb (numbers, escapes, key orders, unicode)', async () => {
    const values = fc.sample(fc.jsonValue({ maxDepth: 4 }), { numRuns: 400, seed: 22 });
    const batch = values.map((args, index) => buildAuditRow({ agentId: 'a', tool: 'query', sector: null, decision: 'allow', outcome: 'ok', args, requestId: `j-${index}` }).row);
    batch.push(
      ...[{ b: 1, a: 2, 10: 'x', 2: 'y', aa: [1e21, 1.5e-7, -0, 0.1 + 0.2, 2 ** 53 + 2] }, { 'é': 1, e: 2, '\u2028': '\n\t"\\' }, { __proto__: null, x: { y: { z: [] } } }].map(
        (args, index) => buildAuditRow({ agentId: 'a', tool: 'query', sector: null, decision: 'allow', outcome: 'ok', args, requestId: `k-${index}` }).row,
      ),
    );
    // Sent by other means than the producer: a "__proto__" key, an index-like key, keys past the BMP.
    const [template] = batch;
    for (const argsJson of ['{"__proto__":{"z":1,"a":[{"y":2,"b":3}]},"a":0}', '{"a":1,"0":2,"ab":{"10":1,"9":2}}', '{"\ud83d\ude00":1,"\uffff":2,"e":3}']) {
      if (template) batch.push({ ...template, argsJson });
    }
    await insertAuditRows(testEnv.db, batch);
    expect(await verifyAuditChain(testEnv.db)).toMatchObject({ intact: true, intactThrough: { row: batch.length } });
  });

  it('never serves the chain columns on GET /api/audit', async () => {
    await writeThreeFlushes();
    const [first] = await selectAuditRows(testEnv.db, { userId: 1, filters: {}, before: null, limit: 1 });
    expect(Object.keys(first?.row ?? {}).sort()).toEqual(
      ['agent_id', 'args', 'created_at', 'decision', 'deny_reason', 'id', 'outcome', 'request_id', 'result_count', 'sector', 'tool'],
    );
  });
});

describe('tampering found and named', () => {
  it('an edited args', async () => {
    await writeThreeFlushes();
    await testEnv.db.query(sql.unsafe`UPDATE audit_log SET args = '{"object": "finance.accounts"}' WHERE chain_seq = 6`);
    const report = await verifyAuditChain(testEnv.db);
    expect(report).toMatchObject({ intact: false, intactThrough: { row: 5 }, break: { kind: 'edited', row: 6, id: await idAt(6) } });
  });

  it('an args whose keys were only reordered is not an edit (jsonb keeps no order)', async () => {
    await writeThreeFlushes();
    await testEnv.db.query(sql.unsafe`UPDATE audit_log SET args = (args::text)::jsonb WHERE chain_seq = 6`);
    expect(await verifyAuditChain(testEnv.db)).toMatchObject({ intact: true });
  });

  it.each([
    ['created_at', sql.fragment`created_at = created_at + interval '1 microsecond'`],
    ['user_id', sql.fragment`user_id = 2`],
    ['result_count', sql.fragment`result_count = result_count + 1`],
    ['deny_reason', sql.fragment`deny_reason = ''`],
  ])('an edited %s', async (_column, change) => {
    await writeThreeFlushes();
    await testEnv.db.query(sql.unsafe`UPDATE audit_log SET ${change} WHERE chain_seq = 12`);
    expect((await verifyAuditChain(testEnv.db)).break).toMatchObject({ kind: 'edited', row: 12 });
  });

  it('a deleted row', async () => {
    await writeThreeFlushes();
    const next = await idAt(8);
    await testEnv.db.query(sql.unsafe`DELETE FROM audit_log WHERE chain_seq = 7`);
    const report = await verifyAuditChain(testEnv.db);
    expect(report).toMatchObject({ intact: false, intactThrough: { row: 6 }, break: { kind: 'removed', row: 7, id: next } });
    expect(report.break?.detail).toContain('place 7 is missing');
  });

  it('a swapped pair', async () => {
    await writeThreeFlushes();
    const [fourth, fifth] = [await idAt(4), await idAt(5)];
    // Rows 4 and 5 trade places in the ledger's order (created_at, id).
    await testEnv.db.query(sql.unsafe`
      UPDATE audit_log SET (id, created_at) = (other.id, other.created_at)
      FROM (SELECT chain_seq, id, created_at FROM audit_log WHERE chain_seq IN (4, 5)) AS other
      WHERE audit_log.chain_seq IN (4, 5) AND other.chain_seq <> audit_log.chain_seq`);
    const report = await verifyAuditChain(testEnv.db);
    expect(report).toMatchObject({ intact: false, intactThrough: { row: 3 }, break: { kind: 'out_of_order', row: 4, id: fourth } });
    const createdAt = await testEnv.db.oneFirst(sql.type(z.object({ created_at: z.string() }))`
      SELECT to_char(created_at AT TIME ZONE 'UTC', ${MICROSECOND_UTC}) AS created_at FROM audit_log WHERE id = ${fourth}`);
    expect(report.break?.detail).toBe(`row id ${fourth} (created_at ${createdAt}) (place 5) comes before row id ${fifth} (place 4)`);
  });

  it('an inserted row among the chained ones', async () => {
    await writeThreeFlushes();
    const inserted = await testEnv.db.oneFirst(sql.type(z.object({ id: z.number() }))`
      INSERT INTO audit_log (user_id, agent_id, tool, decision, outcome, request_id, created_at)
      SELECT 1, 'claude', 'query', 'allow', 'ok', 'forged', created_at + interval '1 microsecond' FROM audit_log WHERE chain_seq = 8
      RETURNING id`);
    const report = await verifyAuditChain(testEnv.db);
    expect(report).toMatchObject({ intact: false, intactThrough: { row: 8 }, break: { kind: 'inserted', row: 9, id: inserted } });
  });

  it('an inserted copy of a chained row, hash and place included', async () => {
    await writeThreeFlushes();
    const copy = await testEnv.db.oneFirst(sql.type(z.object({ id: z.number() }))`
      INSERT INTO audit_log (id, chain_seq, row_hash, user_id, agent_id, tool, sector, decision, deny_reason, args, result_count, outcome, request_id, created_at)
      SELECT id, chain_seq, row_hash, user_id, agent_id, tool, sector, decision, deny_reason, args, result_count, outcome, request_id, created_at + interval '1 microsecond'
      FROM audit_log WHERE chain_seq = 2
      RETURNING id`);
    // A microsecond later than its flush, the copy follows place 4.
    const report = await verifyAuditChain(testEnv.db);
    expect(report).toMatchObject({ intactThrough: { row: 4 }, break: { kind: 'inserted', row: 5, id: copy } });
    expect(report.break?.detail).toContain('claims place 2, already passed');
  });

  it('an inserted row of another user id', async () => {
    await writeThreeFlushes();
    await testEnv.db.query(sql.unsafe`
      INSERT INTO audit_log (user_id, tool, decision, outcome, request_id, created_at)
      SELECT 7, 'query', 'allow', 'ok', 'hidden', created_at FROM audit_log WHERE chain_seq = 12`);
    expect((await verifyAuditChain(testEnv.db)).break).toMatchObject({ kind: 'inserted', row: 13 });
  });

  it('an inserted row of another user id, placed by its created_at among the chained rows', async () => {
    await writeThreeFlushes();
    const inserted = await testEnv.db.oneFirst(sql.type(z.object({ id: z.number() }))`
      INSERT INTO audit_log (user_id, tool, decision, outcome, request_id, created_at)
      SELECT 7, 'query', 'allow', 'ok', 'hidden', created_at + interval '1 microsecond' FROM audit_log WHERE chain_seq = 4
      RETURNING id`);
    expect((await verifyAuditChain(testEnv.db)).break).toMatchObject({ kind: 'inserted', row: 5, id: inserted });
  });

  it('an inserted row of another user id with an id older than the chain\'s, placed by its created_at', async () => {
    await writeThreeFlushes();
    const olderId = (await idAt(1)) - 1;
    await testEnv.db.query(sql.unsafe`
      INSERT INTO audit_log (id, user_id, tool, decision, outcome, request_id, created_at)
      SELECT ${olderId}, 7, 'query', 'allow', 'ok', 'hidden', created_at + interval '1 microsecond' FROM audit_log WHERE chain_seq = 12`);
    expect((await verifyAuditChain(testEnv.db)).break).toMatchObject({ kind: 'inserted', row: 13, id: olderId });
  });

  it('a tail truncated before the last anchor, even with the head record rewound to match', async () => {
    await writeThreeFlushes();
    const anchor = await anchorNow();
    await testEnv.db.query(sql.unsafe`DELETE FROM audit_log WHERE chain_seq > 9`);
    await testEnv.db.query(sql.unsafe`
      UPDATE audit_chain SET (head_seq, head_id, head_hash) = (SELECT chain_seq, id, row_hash FROM audit_log WHERE chain_seq = 9)`);
    const report = await verifyAuditChain(testEnv.db, { anchor });
    expect(report).toMatchObject({ intact: false, intactThrough: { row: 9 }, break: { kind: 'truncated', row: 10, id: null } });
    expect(report.break?.detail).toContain('recorded 12 rows');
  });

  it('a tail cut after the last anchor cannot be proven once the head record is rewound: those rows were never anchored', async () => {
    await insertAuditRows(testEnv.db, rows(4, 'a'));
    const anchor = await anchorNow();
    await insertAuditRows(testEnv.db, rows(4, 'b'));
    expect(await verifyAuditChain(testEnv.db, { anchor })).toMatchObject({ intact: true, unanchoredRows: 4, anchor: { rows: 4, matched: true } });
    await testEnv.db.query(sql.unsafe`DELETE FROM audit_log WHERE chain_seq > 6`);
    // With the head record left alone, the database itself still tells.
    expect((await verifyAuditChain(testEnv.db, { anchor })).break).toMatchObject({ kind: 'truncated', row: 7 });
    await testEnv.db.query(sql.unsafe`
      UPDATE audit_chain SET (head_seq, head_id, head_hash) = (SELECT chain_seq, id, row_hash FROM audit_log WHERE chain_seq = 6)`);
    expect(await verifyAuditChain(testEnv.db, { anchor })).toMatchObject({ intact: true, intactThrough: { row: 6 }, unanchoredRows: 2 });
  });

  it('a chain rewritten whole, consistent in itself, against the anchor', async () => {
    await writeThreeFlushes();
    const anchor = await anchorNow();
    await testEnv.db.query(sql.unsafe`TRUNCATE audit_log`);
    await testEnv.db.query(sql.unsafe`UPDATE audit_chain SET head_seq = 0, head_id = NULL, head_created_at = NULL, head_hash = start_hash`);
    for (const prefix of ['a', 'b', 'x']) await insertAuditRows(testEnv.db, rows(4, prefix));
    expect(await verifyAuditChain(testEnv.db)).toMatchObject({ intact: true });
    const report = await verifyAuditChain(testEnv.db, { anchor });
    // Row 1 stands at a place the anchor covers but was written after it: the first row replaced.
    expect(report).toMatchObject({ intact: false, intactThrough: { row: 0 }, break: { kind: 'rewritten', row: 1, id: await idAt(1) }, anchor: { matched: null } });
  });
});
