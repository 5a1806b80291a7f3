import { randomBytes, randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { auditChainKeyId } from '../crypto/audit-chain-key.ts';
import { sql } from '../db/index.ts';
import { anchorOfHead, useTestEnvironment } from '@pcg/testkit/testing';
import type { AuditAnchor } from './audit-anchor.ts';
import { chainHash } from './audit-chain-fns.ts';
import { MICROSECOND_UTC, readChainHead } from './audit-chain-queries.ts';
import { readDatabaseSystemId, verifyAuditChain } from './audit-chain-verify.ts';
import { buildAuditRow } from './audit-fns.ts';
import { insertAuditRows } from './audit-queries.ts';
import type { QueuedAuditRow } from './audit-types.ts';

const testEnv = useTestEnvironment();
const keyBytes = randomBytes(32);
const key = { bytes: keyBytes, id: auditChainKeyId(keyBytes) };

function rows(count: number, prefix: string): QueuedAuditRow[] {
  return Array.from({ length: count }, (_, index) =>
    buildAuditRow({ agentId: 'claude', tool: 'query', sector: 'finance', decision: 'allow', outcome: 'ok', args: { limit: index }, requestId: `${prefix}-${index}` }).row,
  );
}
/** Three flushes of 4 rows: places 1-4, 5-8 and 9-12. */
async function writeThree(options: { key?: Buffer } = {}): Promise<void> {
  for (const prefix of ['a', 'b', 'c']) await insertAuditRows(testEnv.db, rows(4, prefix), options);
}

const RowSchema = z.object({ id: z.number(), created_at: z.string(), hash: z.string() });
/** The row at a place, as the report names it: `row id <id> (created_at <microsecond UTC>)`. */
async function rowAt(seq: number): Promise<{ id: number; hash: string; described: string; createdAt: string }> {
  const row = await testEnv.db.one(sql.type(RowSchema)`
    SELECT id, to_char(created_at AT TIME ZONE 'UTC', ${MICROSECOND_UTC}) AS created_at, encode(row_hash, 'hex') AS hash
    FROM audit_log WHERE chain_seq = ${seq}`);
  return { id: row.id, hash: row.hash, createdAt: row.created_at, described: `row id ${row.id} (created_at ${row.created_at})` };
}

async function anchorNow(overrides: Partial<AuditAnchor> = {}): Promise<AuditAnchor> {
  return { ...anchorOfHead(await readChainHead(testEnv.db), key.id, '2026-11-27T06:00:00.000Z'), ...overrides };
}

beforeEach(async () => {
  await testEnv.db.query(sql.unsafe`TRUNCATE audit_log`);
  await testEnv.db.query(sql.unsafe`
    UPDATE audit_chain SET start_id = NULL, start_created_at = NULL, legacy_rows = 0, first_keyed_seq = NULL,
      head_seq = 0, head_id = NULL, head_created_at = NULL, head_hash = start_hash, first_hash = NULL`);
});

describe('the report of an intact chain', () => {
  it('holds every field, with the anchor matched and the rows after it counted', async () => {
    await insertAuditRows(testEnv.db, rows(4, 'a'), { key: key.bytes });
    const anchor = await anchorNow();
    await insertAuditRows(testEnv.db, rows(3, 'b'), { key: key.bytes });
    const head = await readChainHead(testEnv.db);
    expect(await verifyAuditChain(testEnv.db, { key, anchor })).toEqual({
      intact: true,
      intactThrough: { row: 7, id: head.id },
      break: null,
      rowsBeforeChain: 0,
      headRows: 7,
      chainId: head.chainId,
      keyId: key.id,
      firstKeyedRow: 1,
      uncheckedRows: 0,
      anchor: { ...anchor, matched: true, chain: 'this' },
      databaseSystemIdChanged: null,
      unanchoredRows: 3,
      checkedRows: 7,
    });
  });

  it('without the key, counts the keyed rows it could not check and names no key', async () => {
    await writeThree({ key: key.bytes });
    expect(await verifyAuditChain(testEnv.db)).toMatchObject({ intact: true, keyId: null, firstKeyedRow: 1, uncheckedRows: 12, anchor: null, unanchoredRows: 12 });
  });

  it('of an empty chain: nothing proven, nothing broken', async () => {
    expect(await verifyAuditChain(testEnv.db, { key })).toMatchObject({ intact: true, intactThrough: { row: 0, id: null }, break: null, headRows: 0, checkedRows: 0, firstKeyedRow: null });
  });

  it('compares the database system identifier with the anchor\'s, when the anchor has one', async () => {
    await writeThree({ key: key.bytes });
    const systemId = await readDatabaseSystemId(testEnv.db);
    expect(systemId).toMatch(/^\d+$/);
    expect(await verifyAuditChain(testEnv.db, { key, anchor: await anchorNow({ databaseSystemId: systemId }) })).toMatchObject({ intact: true, databaseSystemIdChanged: false });
    expect(await verifyAuditChain(testEnv.db, { key, anchor: await anchorNow({ databaseSystemId: '1' }) })).toMatchObject({ databaseSystemIdChanged: true });
  });

  it('reads no system identifier where the role may not', async () => {
    const refusing = { maybeOneFirst: () => Promise.reject(new Error('permission denied for function pg_control_system')) };
    expect(await readDatabaseSystemId(refusing as unknown as Parameters<typeof readDatabaseSystemId>[0])).toBeNull();
  });
});

describe('each break named with a detail an operator can act on', () => {
  it('an edited row of an unkeyed chain, checked without a key', async () => {
    await writeThree();
    await testEnv.db.query(sql.unsafe`UPDATE audit_log SET result_count = 5 WHERE chain_seq = 6`);
    const sixth = await rowAt(6);
    expect((await verifyAuditChain(testEnv.db)).break).toEqual({ kind: 'edited', row: 6, id: sixth.id, detail: `${sixth.described} at place 6 no longer matches its link` });
  });

  it('an edited keyed row, naming the key it was checked with, and when the anchor says another key wrote the chain', async () => {
    await writeThree({ key: key.bytes });
    await testEnv.db.query(sql.unsafe`UPDATE audit_log SET result_count = 5 WHERE chain_seq = 6`);
    const sixth = await rowAt(6);
    expect((await verifyAuditChain(testEnv.db, { key })).break?.detail).toBe(`${sixth.described} at place 6 no longer matches its link under chain key ${key.id}`);
    const anchor = await anchorNow({ keyId: 'other-key' });
    expect((await verifyAuditChain(testEnv.db, { key, anchor })).break?.detail).toBe(
      `${sixth.described} at place 6 no longer matches its link under chain key ${key.id} (the anchor was written under key other-key: this DATA_DIR's key is not the chain's)`,
    );
    expect((await verifyAuditChain(testEnv.db, { key, anchor: await anchorNow({ keyId: key.id }) })).break?.detail).toBe(
      `${sixth.described} at place 6 no longer matches its link under chain key ${key.id}`,
    );
  });

  it('several places removed', async () => {
    await writeThree();
    await testEnv.db.query(sql.unsafe`DELETE FROM audit_log WHERE chain_seq IN (7, 8)`);
    const ninth = await rowAt(9);
    expect((await verifyAuditChain(testEnv.db)).break).toEqual({ kind: 'removed', row: 7, id: ninth.id, detail: `places 7 to 8 are missing before ${ninth.described}` });
  });

  it('the place before the last row removed', async () => {
    await writeThree();
    await testEnv.db.query(sql.unsafe`DELETE FROM audit_log WHERE chain_seq = 11`);
    const last = await rowAt(12);
    expect((await verifyAuditChain(testEnv.db)).break).toEqual({ kind: 'removed', row: 11, id: last.id, detail: `place 11 is missing before ${last.described}` });
  });

  it('a chained row that lost its hash, or its place', async () => {
    await writeThree();
    const sixth = await rowAt(6);
    const noHash = { kind: 'inserted', row: 6, id: sixth.id, detail: `${sixth.described} carries no chain hash: it was not written by the audit-writer` };
    await testEnv.db.query(sql.unsafe`UPDATE audit_log SET row_hash = NULL WHERE chain_seq = 6`);
    expect((await verifyAuditChain(testEnv.db)).break).toEqual(noHash);
    await testEnv.db.query(sql.unsafe`UPDATE audit_log SET row_hash = decode(${sixth.hash}, 'hex'), chain_seq = NULL WHERE id = ${sixth.id}`);
    expect((await verifyAuditChain(testEnv.db)).break).toEqual({
      ...noHash,
      detail: `${sixth.described} carries a chain hash but no place in the chain: its place was cleared after it was written`,
    });
  });

  it('a row with no chain hash among the chained ones', async () => {
    await writeThree();
    const inserted = await testEnv.db.one(sql.type(z.object({ id: z.number(), created_at: z.string() }))`
      INSERT INTO audit_log (user_id, tool, decision, outcome, request_id, created_at)
      SELECT 1, 'query', 'allow', 'ok', 'forged', created_at + interval '1 microsecond' FROM audit_log WHERE chain_seq = 8
      RETURNING id, to_char(created_at AT TIME ZONE 'UTC', ${MICROSECOND_UTC}) AS created_at`);
    expect((await verifyAuditChain(testEnv.db)).break).toEqual({
      kind: 'inserted',
      row: 9,
      id: inserted.id,
      detail: `row id ${inserted.id} (created_at ${inserted.created_at}) carries no chain hash: it was not written by the audit-writer`,
    });
  });

  it('a copy claiming the place the next row holds', async () => {
    await writeThree({ key: key.bytes });
    const copy = await testEnv.db.one(sql.type(z.object({ id: z.number(), created_at: z.string() }))`
      INSERT INTO audit_log (chain_seq, row_hash, user_id, agent_id, tool, sector, decision, deny_reason, args, result_count, outcome, request_id, created_at)
      SELECT chain_seq, row_hash, user_id, agent_id, tool, sector, decision, deny_reason, args, result_count, outcome, request_id, created_at - interval '1 microsecond'
      FROM audit_log WHERE chain_seq = 5
      RETURNING id, to_char(created_at AT TIME ZONE 'UTC', ${MICROSECOND_UTC}) AS created_at`);
    expect((await verifyAuditChain(testEnv.db, { key })).break).toEqual({
      kind: 'inserted',
      row: 5,
      id: copy.id,
      detail: `row id ${copy.id} (created_at ${copy.created_at}) claims place 5, which the next row holds`,
    });
  });

  it('a tail cut before the head record, and before the anchor', async () => {
    await writeThree({ key: key.bytes });
    const anchor = await anchorNow();
    await testEnv.db.query(sql.unsafe`DELETE FROM audit_log WHERE chain_seq > 9`);
    expect((await verifyAuditChain(testEnv.db, { key })).break).toEqual({
      kind: 'truncated',
      row: 10,
      id: null,
      detail: "the chain ends at place 9, but the database's head record says 12 rows",
    });
    expect((await verifyAuditChain(testEnv.db, { key, anchor })).break).toEqual({
      kind: 'truncated',
      row: 10,
      id: null,
      detail: 'the chain ends at place 9, but the anchor written at 2026-11-27T06:00:00.000Z recorded 12 rows',
    });
  });

  it('a chain that differs from the anchor at the anchor\'s row', async () => {
    await writeThree({ key: key.bytes });
    const anchor = await anchorNow({ rows: 4, hash: 'ab'.repeat(32), id: (await rowAt(4)).id });
    const fourth = await rowAt(4);
    const report = await verifyAuditChain(testEnv.db, { key, anchor });
    expect(report).toMatchObject({ intactThrough: { row: 3 }, anchor: { matched: false }, unanchoredRows: 0 });
    expect(report.break).toEqual({
      kind: 'rewritten',
      row: 4,
      id: fourth.id,
      detail: `${fourth.described} at place 4 differs from the anchor written at 2026-11-27T06:00:00.000Z: the chain was rewritten`,
    });
    // The same hash under another id is another row too.
    const otherId = await anchorNow({ rows: 4, hash: fourth.hash, id: fourth.id + 1000 });
    expect((await verifyAuditChain(testEnv.db, { key, anchor: otherId })).break).toMatchObject({ kind: 'rewritten', row: 4 });
    expect((await verifyAuditChain(testEnv.db, { key, anchor: await anchorNow({ rows: 4, hash: fourth.hash, id: fourth.id }) })).intact).toBe(true);
  });

  /** The break of a row written after the anchor (of 06:00) at a place it covers. */
  const writtenAfterAnchor = (row: { id: number; described: string }, place: number, covers: number) => ({
    kind: 'rewritten',
    row: place,
    id: row.id,
    detail: `${row.described} at place ${place} was written after the anchor of 2026-11-27T06:00:00.000Z, which covers places up to ${covers}: the rows anchored there were replaced`,
  });

  it('a row written after the anchor at a place it covers', async () => {
    await writeThree({ key: key.bytes });
    const anchor = await anchorNow({ rows: 8, ...(await rowAt(8)), createdAt: (await rowAt(4)).createdAt, id: (await rowAt(4)).id });
    const fifth = await rowAt(5);
    expect((await verifyAuditChain(testEnv.db, { key, anchor })).break).toEqual(writtenAfterAnchor(fifth, 5, 8));
  });

  it("a row of the anchored row's own flush, written after it at a place the anchor covers", async () => {
    await writeThree({ key: key.bytes });
    const [second, third, fourth] = [await rowAt(2), await rowAt(3), await rowAt(4)];
    const anchor = await anchorNow({ rows: 4, hash: fourth.hash, id: second.id, createdAt: second.createdAt });
    expect(second.createdAt).toBe(third.createdAt);
    expect((await verifyAuditChain(testEnv.db, { key, anchor })).break).toEqual(writtenAfterAnchor(third, 3, 4));
  });

  it('a first row other than the one the head record names', async () => {
    await writeThree({ key: key.bytes });
    await testEnv.db.query(sql.unsafe`UPDATE audit_chain SET first_hash = decode(${'cd'.repeat(32)}, 'hex')`);
    const first = await rowAt(1);
    expect((await verifyAuditChain(testEnv.db, { key })).break).toEqual({
      kind: 'rewritten',
      row: 1,
      id: first.id,
      detail: `${first.described} is not the first row the chain's head record names`,
    });
  });

  it('a plain SHA-256 link where the chain is keyed', async () => {
    await insertAuditRows(testEnv.db, rows(2, 'a'), { key: key.bytes });
    const head = await readChainHead(testEnv.db);
    const second = await rowAt(2);
    const stored = await testEnv.db.one(sql.type(z.object({ user_id: z.number(), request_id: z.string(), args: z.unknown() }))`
      SELECT user_id, request_id, args FROM audit_log WHERE chain_seq = 2`);
    const first = await rowAt(1);
    const plain = chainHash(first.hash, {
      seq: 2, id: second.id, userId: stored.user_id, agentId: 'claude', tool: 'query', sector: 'finance', decision: 'allow', denyReason: null,
      args: stored.args, resultCount: 0, outcome: 'ok', requestId: stored.request_id, createdAt: second.createdAt,
    });
    await testEnv.db.query(sql.unsafe`UPDATE audit_log SET row_hash = decode(${plain}, 'hex') WHERE chain_seq = 2`);
    await testEnv.db.query(sql.unsafe`UPDATE audit_chain SET head_hash = decode(${plain}, 'hex')`);
    expect(head.seq).toBe(2);
    expect((await verifyAuditChain(testEnv.db, { key })).break).toEqual({
      kind: 'forged',
      row: 2,
      id: second.id,
      detail: `${second.described} at place 2 is linked with a plain SHA-256 where the chain is keyed: it was not written by the audit-writer`,
    });
  });

  it('an anchor of another chain, walked without', async () => {
    await writeThree({ key: key.bytes });
    const chainId = randomUUID();
    const head = await readChainHead(testEnv.db);
    const other = await anchorNow({ chainId, firstHash: 'ef'.repeat(32), rows: 40 });
    const report = await verifyAuditChain(testEnv.db, { key, anchor: other });
    expect(report).toMatchObject({ intactThrough: { row: 12 }, anchor: { chain: 'another', matched: null }, unanchoredRows: 0 });
    expect(report.break).toEqual({
      kind: 'another_chain',
      row: 0,
      id: null,
      detail: `this anchor belongs to another chain (chain ${chainId}, written at 2026-11-27T06:00:00.000Z); this database's chain is ${head.chainId}. Nothing after the head record's rows could be proven against an anchor`,
    });
  });
});
