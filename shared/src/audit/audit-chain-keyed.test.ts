import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, rmdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { auditChainKeyId, auditChainKeyPath, loadAuditChainKey } from '../crypto/audit-chain-key.ts';
import { sql } from '../db/index.ts';
import { anchorOfHead, useTestEnvironment } from '@pcg/testkit/testing';
import { buildAuditRow } from './audit-fns.ts';
import { insertAuditRows } from './audit-queries.ts';
import { chainHash } from './audit-chain-fns.ts';
import { MICROSECOND_UTC, readChainHead } from './audit-chain-queries.ts';
import { verifyAuditChain } from './audit-chain-verify.ts';
import { verifyAuditLedger } from './audit-chain-service.ts';
import { auditAnchorPath, writeAuditAnchor, type AuditAnchor } from './audit-anchor.ts';
import type { QueuedAuditRow } from './audit-types.ts';

const testEnv = useTestEnvironment();
/** A second database, as a test stack or a new DATABASE_URL would be, used with the same DATA_DIR. */
const otherEnv = useTestEnvironment();
/** The chain key, as the audit-writer keeps it: outside the database. */
const keyBytes = randomBytes(32);
const key = { bytes: keyBytes, id: auditChainKeyId(keyBytes) };

function rows(count: number, prefix: string): QueuedAuditRow[] {
  return Array.from({ length: count }, (_, index) =>
    buildAuditRow({ agentId: 'claude', tool: 'query', sector: 'finance', decision: 'allow', outcome: 'ok', args: { object: 'finance.transactions', limit: index }, requestId: `${prefix}-${index}` }).row,
  );
}

/** One flush of 4 rows as the audit-writer writes it, linked with the chain key. */
const writeKeyed = (prefix: string, count = 4) => insertAuditRows(testEnv.db, rows(count, prefix), { key: key.bytes });
/** One flush of 4 rows as the audit-writer wrote it before the chain was keyed. */
const writeUnkeyed = (prefix: string, count = 4) => insertAuditRows(testEnv.db, rows(count, prefix));

const idAt = (seq: number) => testEnv.db.oneFirst(sql.type(z.object({ id: z.number() }))`SELECT id FROM audit_log WHERE chain_seq = ${seq}`);

/** The head as the audit-writer anchors it now (the new format: it knows its chain and key). */
async function anchorNow(): Promise<AuditAnchor> {
  return anchorOfHead(await readChainHead(testEnv.db), key.id, new Date().toISOString());
}

const rewindHeadTo = (seq: number) =>
  testEnv.db.query(sql.unsafe`
    UPDATE audit_chain SET (head_seq, head_id, head_hash, head_created_at) =
      (SELECT chain_seq, id, row_hash, created_at FROM audit_log WHERE chain_seq = ${seq})`);

/**
 * What someone who can write the database but does not hold the key would do: append a row after the head,
 * link it with a recomputed plain SHA-256 over what is all in the database, and move the head to it.
 */
async function forgeAppend(): Promise<number> {
  const head = await readChainHead(testEnv.db);
  const forged = await testEnv.db.one(sql.type(z.object({ id: z.number(), created_at: z.string() }))`
    INSERT INTO audit_log (id, user_id, agent_id, tool, sector, decision, args, result_count, outcome, request_id, created_at)
    VALUES (nextval('audit_log_id_seq'), 1, 'claude', 'query', 'finance', 'allow', '{"object":"finance.accounts"}', 0, 'ok', 'forged',
            ${head.createdAt}::timestamptz + interval '1 millisecond')
    RETURNING id, to_char(created_at AT TIME ZONE 'UTC', ${MICROSECOND_UTC}) AS created_at`);
  const seq = head.seq + 1;
  const hash = chainHash(head.hash, {
    seq,
    id: forged.id,
    userId: 1,
    agentId: 'claude',
    tool: 'query',
    sector: 'finance',
    decision: 'allow',
    denyReason: null,
    args: { object: 'finance.accounts' },
    resultCount: 0,
    outcome: 'ok',
    requestId: 'forged',
    createdAt: forged.created_at,
  });
  await testEnv.db.query(sql.unsafe`UPDATE audit_log SET chain_seq = ${seq}, row_hash = decode(${hash}, 'hex') WHERE id = ${forged.id}`);
  await testEnv.db.query(sql.unsafe`
    UPDATE audit_chain SET head_seq = ${seq}, head_id = ${forged.id}, head_hash = decode(${hash}, 'hex'), head_created_at = ${forged.created_at}::timestamptz`);
  return forged.id;
}

let dataDir: string;
beforeEach(async () => {
  await testEnv.db.query(sql.unsafe`TRUNCATE audit_log`);
  await testEnv.db.query(sql.unsafe`
    UPDATE audit_chain SET start_id = NULL, start_created_at = NULL, legacy_rows = 0,
      head_seq = 0, head_id = NULL, head_created_at = NULL, head_hash = start_hash, first_hash = NULL`);
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'pcg-keyed-'));
});
afterEach(async () => rm(dataDir, { recursive: true, force: true }));

describe('the keyed chain, with the key outside the database', () => {
  it('verifies with its key, naming its first keyed row and the key it used', async () => {
    for (const prefix of ['a', 'b', 'c']) await writeKeyed(prefix);
    expect(await verifyAuditChain(testEnv.db, { key, anchor: await anchorNow() })).toMatchObject({
      intact: true,
      intactThrough: { row: 12 },
      keyId: key.id,
      firstKeyedRow: 1,
      uncheckedRows: 0,
      anchor: { matched: true, chain: 'this' },
    });
  });

  it('reports a forged append (a recomputed plain SHA-256, the head moved to it) at the forged row, also once the writer chained onto it', async () => {
    for (const prefix of ['a', 'b', 'c']) await writeKeyed(prefix);
    const anchor = await anchorNow();
    const forged = await forgeAppend();
    const report = await verifyAuditChain(testEnv.db, { key, anchor });
    expect(report).toMatchObject({ intact: false, intactThrough: { row: 12 }, break: { kind: 'forged', row: 13, id: forged } });
    await writeKeyed('after');
    expect(await verifyAuditChain(testEnv.db, { key, anchor })).toMatchObject({ intact: false, break: { kind: 'forged', row: 13, id: forged } });
    // Without the key too: a plain link where the chain is keyed is no link the writer writes.
    expect(await verifyAuditChain(testEnv.db, { anchor })).toMatchObject({ intact: false, break: { kind: 'forged', row: 13 } });
  });

  it('reports an edited keyed row whose plain SHA-256 was recomputed, at that row', async () => {
    for (const prefix of ['a', 'b', 'c']) await writeKeyed(prefix);
    await testEnv.db.query(sql.unsafe`UPDATE audit_log SET args = '{"object": "finance.accounts"}' WHERE chain_seq = 12`);
    expect(await verifyAuditChain(testEnv.db, { key })).toMatchObject({ intact: false, break: { kind: 'edited', row: 12, id: await idAt(12) } });
  });

  it('reports rows deleted across an anchor with the head rewound at the first missing place, and rows the writer wrote there since at the first of them', async () => {
    for (const prefix of ['a', 'b', 'c']) await writeKeyed(prefix);
    const anchor = await anchorNow();
    await writeKeyed('d');
    await testEnv.db.query(sql.unsafe`DELETE FROM audit_log WHERE chain_seq >= 10`);
    await rewindHeadTo(9);
    const cut = await verifyAuditChain(testEnv.db, { key, anchor });
    expect(cut).toMatchObject({ intact: false, intactThrough: { row: 9 }, break: { kind: 'truncated', row: 10 } });
    // The writer goes on from the rewound head: its rows carry the key, but stand where anchored rows stood.
    await writeKeyed('e', 6);
    const report = await verifyAuditChain(testEnv.db, { key, anchor });
    expect(report).toMatchObject({ intact: false, intactThrough: { row: 9 }, break: { kind: 'rewritten', row: 10, id: await idAt(10) } });
    expect(report.break?.detail).toContain('was written after the anchor');
  });

  it('reports an anchor from another database as belonging to another chain, never as truncation', async () => {
    for (const prefix of ['a', 'b']) await writeKeyed(prefix);
    const other: AuditAnchor = { ...(await anchorNow()), rows: 40, chainId: randomUUID(), firstHash: randomBytes(32).toString('hex'), hash: randomBytes(32).toString('hex') };
    const report = await verifyAuditChain(testEnv.db, { key, anchor: other });
    expect(report).toMatchObject({ intact: false, intactThrough: { row: 8 }, break: { kind: 'another_chain' }, anchor: { chain: 'another', matched: null } });
    expect(report.break?.detail).toContain('this anchor belongs to another chain');
  });

  it('reports the anchor a second database left in the same DATA_DIR as belonging to another chain', async () => {
    for (const prefix of ['a', 'b']) await writeKeyed(prefix);
    // The other database's writer, with the same key, wrote more rows and anchored its head.
    for (const prefix of ['x', 'y', 'z']) await insertAuditRows(otherEnv.db, rows(4, prefix), { key: key.bytes });
    const otherHead = await readChainHead(otherEnv.db);
    const theirs: AuditAnchor = { ...otherHead, rows: otherHead.seq, writtenAt: new Date().toISOString(), keyId: key.id, firstKeyedRow: 1, databaseSystemId: null };
    const report = await verifyAuditChain(testEnv.db, { key, anchor: theirs });
    expect(report).toMatchObject({ intact: false, intactThrough: { row: 8 }, break: { kind: 'another_chain', row: 0 }, anchor: { chain: 'another' } });
    expect(report.break?.detail).toContain('this anchor belongs to another chain');
  });

  it('does not take a cut chain whose head record was given a new chain id for another chain: its first row still names it', async () => {
    for (const prefix of ['a', 'b', 'c']) await writeKeyed(prefix);
    const anchor = await anchorNow();
    await testEnv.db.query(sql.unsafe`DELETE FROM audit_log WHERE chain_seq > 6`);
    await rewindHeadTo(6);
    await testEnv.db.query(sql.unsafe`UPDATE audit_chain SET chain_id = ${randomUUID()}`);
    expect(await verifyAuditChain(testEnv.db, { key, anchor })).toMatchObject({ intact: false, break: { kind: 'truncated', row: 7 }, anchor: { chain: 'this' } });
  });

  it('reports a changed database system identifier as information only', async () => {
    for (const prefix of ['a', 'b']) await writeKeyed(prefix);
    const report = await verifyAuditChain(testEnv.db, { key, anchor: { ...(await anchorNow()), databaseSystemId: '1' } });
    expect(report).toMatchObject({ intact: true, databaseSystemIdChanged: true });
  });
});

describe('a chain begun before the chain was keyed', () => {
  it('verifies, old rows as they were written and the rest with the key, naming the first keyed row; its old-format anchor is accepted', async () => {
    for (const prefix of ['old-a', 'old-b']) await writeUnkeyed(prefix);
    const head = await readChainHead(testEnv.db);
    const oldFormat: AuditAnchor = { rows: head.seq, id: head.id, hash: head.hash, createdAt: head.createdAt, writtenAt: new Date().toISOString() };
    for (const prefix of ['new-a', 'new-b']) await writeKeyed(prefix);
    expect(await verifyAuditChain(testEnv.db, { key, anchor: oldFormat })).toMatchObject({
      intact: true,
      intactThrough: { row: 16 },
      firstKeyedRow: 9,
      anchor: { matched: true, chain: 'old_format' },
      unanchoredRows: 8,
    });
  });

  it('without the key, checks the old rows as written and counts the rest unchecked, from the first keyed place the database records', async () => {
    for (const prefix of ['old-a', 'old-b']) await writeUnkeyed(prefix);
    for (const prefix of ['new-a', 'new-b']) await writeKeyed(prefix);
    expect(await testEnv.db.oneFirst(sql.type(z.object({ first_keyed_seq: z.number().nullable() }))`SELECT first_keyed_seq FROM audit_chain`)).toBe(9);
    expect(await verifyAuditChain(testEnv.db)).toMatchObject({ intact: true, intactThrough: { row: 16 }, firstKeyedRow: 9, uncheckedRows: 8 });
  });

  it('still reports an edit among the old rows', async () => {
    for (const prefix of ['old-a', 'old-b']) await writeUnkeyed(prefix);
    await writeKeyed('new');
    await testEnv.db.query(sql.unsafe`UPDATE audit_log SET result_count = 9 WHERE chain_seq = 3`);
    expect(await verifyAuditChain(testEnv.db, { key })).toMatchObject({ intact: false, break: { kind: 'edited', row: 3 } });
  });
});

describe('verifyAuditLedger: which key, which anchor, what was proven', () => {
  it('without the key checks internal consistency only and says so', async () => {
    for (const prefix of ['a', 'b']) await writeKeyed(prefix);
    const before = performance.now();
    const result = await verifyAuditLedger(testEnv.db, { dataDir });
    const took = performance.now() - before;
    expect(result).toMatchObject({ intact: true, key: { state: 'absent', id: null }, keyId: null, uncheckedRows: 8, anchor: null, anchorFile: 'absent' });
    expect(result.proven).toMatch(/^internal consistency only/);
    expect(result.elapsedMs).toBeGreaterThanOrEqual(0);
    expect(result.elapsedMs).toBeLessThanOrEqual(Math.ceil(took));
  });

  it('still walks the chain when the anchor and key files are damaged, and says so', async () => {
    for (const prefix of ['a', 'b']) await writeKeyed(prefix);
    await writeFile(auditAnchorPath(dataDir), 'not an anchor');
    await writeFile(auditChainKeyPath(dataDir), 'not a key', { mode: 0o600 });
    const result = await verifyAuditLedger(testEnv.db, { dataDir });
    expect(result).toMatchObject({ intact: true, checkedRows: 8, uncheckedRows: 8, anchor: null, anchorFile: 'unreadable', key: { state: 'unreadable', id: null }, keyId: null });
    expect(result.proven).toMatch(/^internal consistency only \(the chain key file is damaged\)/);
  });

  it('fails when DATA_DIR cannot be read, rather than taking that for a damaged or absent file', async () => {
    await mkdir(auditAnchorPath(dataDir));
    await expect(verifyAuditLedger(testEnv.db, { dataDir })).rejects.toMatchObject({ code: 'EISDIR' });
    await rmdir(auditAnchorPath(dataDir));
    await mkdir(auditChainKeyPath(dataDir));
    await expect(verifyAuditLedger(testEnv.db, { dataDir })).rejects.toMatchObject({ code: 'EISDIR' });
  });

  it('with the key in DATA_DIR names it by id and says what it proved, and never serves the key', async () => {
    const inDataDir = await loadAuditChainKey(dataDir);
    await insertAuditRows(testEnv.db, rows(4, 'a'), { key: inDataDir.bytes });
    const anchor = { ...(await anchorNow()), keyId: inDataDir.id };
    await writeAuditAnchor(dataDir, anchor);
    const result = await verifyAuditLedger(testEnv.db, { dataDir });
    expect(result).toMatchObject({ intact: true, key: { state: 'present', id: inDataDir.id }, firstKeyedRow: 1, anchor: { rows: 4, matched: true, chain: 'this' }, anchorFile: 'present' });
    expect(result.proven).toContain(`with chain key ${inDataDir.id}: every edit, insertion, deletion, reorder and forged append up to the anchor's row 4`);
    const served = JSON.stringify(result);
    expect(served).not.toContain(inDataDir.bytes.toString('base64'));
    expect(served).not.toContain(inDataDir.bytes.toString('hex'));
  });
});
