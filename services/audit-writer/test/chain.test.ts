import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  AUDIT_ANCHOR_LOG_LINE,
  AUDIT_QUEUE_KEY,
  MICROSECOND_UTC,
  chainHash,
  readChainHead,
  type AuditAnchor,
  auditAnchorPath,
  createAuditProducer,
  readAuditAnchor,
  readAuditDrops,
  verifyAuditChain,
  type AuditProducer,
} from '@pcg/shared/audit';
import { loadConfig } from '@pcg/shared/config';
import { AUDIT_CHAIN_KEY_FILE, auditChainKeyPath, loadAuditChainKey, type AuditChainKey } from '@pcg/shared/crypto';
import { sql } from '@pcg/shared/db';
import { z } from 'zod';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { AUDIT_ANCHOR_REFUSED_LOG_LINE, AUDIT_CHAIN_KEY_MISMATCH_LOG_LINE, createAnchorKeeper } from '../src/anchor.ts';
import { auditWriterConfigSchema } from '../src/config.ts';
import { startAuditWriter } from '../src/service.ts';
import { createAuditWriter } from '../src/writer.ts';

const testEnv = useTestEnvironment();
const HOUR = 3_600_000;
let producer: AuditProducer;
let dataDir: string;
let key: AuditChainKey;
const CHAIN_KEY_BYTES = randomBytes(32);

async function queue(count: number, prefix: string): Promise<void> {
  for (let index = 0; index < count; index += 1) {
    producer.record({ agentId: 'claude', tool: 'query', sector: 'mail', decision: 'allow', outcome: 'ok', args: { n: index, object: 'mail.messages' }, requestId: `${prefix}-${index}` });
  }
  await producer.drain();
}

const writer = (batchSize = 10_000) =>
  createAuditWriter({ db: testEnv.db, direct: testEnv.direct, redis: testEnv.redis, log: createCapturingLogger().log, flushMs: HOUR, batchSize, chainKey: key.bytes });

async function drain(w: ReturnType<typeof writer>): Promise<void> {
  while ((await w.flush()).taken > 0);
}

beforeEach(async () => {
  await testEnv.redis.del(AUDIT_QUEUE_KEY);
  producer = createAuditProducer({ redis: testEnv.redis, settings: { AUDIT_QUEUE_CAPACITY: 100_000 }, log: createCapturingLogger().log });
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'pcg-anchor-'));
  // One key for the file, as one DATA_DIR keeps one; the service started on dataDir reads it from there.
  await writeFile(auditChainKeyPath(dataDir), `${CHAIN_KEY_BYTES.toString('base64')}\n`, { mode: 0o600 });
  key = await loadAuditChainKey(dataDir);
  // Each test starts an empty chain, so a chain one test breaks on purpose is not the next one's base.
  await testEnv.db.query(sql.unsafe`TRUNCATE audit_log`);
  await testEnv.db.query(sql.unsafe`
    UPDATE audit_chain SET start_id = NULL, start_created_at = NULL, legacy_rows = 0, head_seq = 0, head_id = NULL,
      head_created_at = NULL, head_hash = start_hash, first_hash = NULL, first_keyed_seq = NULL`);
});
afterEach(async () => rm(dataDir, { recursive: true, force: true }));

describe('the chain the audit-writer writes', () => {
  it('continues across a restart of the writer', async () => {
    await queue(30, 'before');
    const first = writer(10);
    await drain(first);
    await first.close();
    await queue(30, 'after');
    await drain(writer(7));
    const report = await verifyAuditChain(testEnv.db, { key });
    expect(report).toMatchObject({ intact: true, firstKeyedRow: 1 });
    expect(report.intactThrough.row).toBe(report.headRows);
    expect(report.headRows).toBeGreaterThanOrEqual(60);
  });

  it('stays one chain with two writers flushing at once (they take turns on the head row)', async () => {
    const before = (await verifyAuditChain(testEnv.db)).headRows;
    await queue(2_000, 'pair');
    const [one, two] = [writer(50), writer(50)];
    await Promise.all([drain(one), drain(two)]);
    expect(one.stats().written + two.stats().written).toBe(2_000);
    expect(one.stats().written).toBeGreaterThan(0);
    expect(two.stats().written).toBeGreaterThan(0);
    expect(await verifyAuditChain(testEnv.db)).toMatchObject({ intact: true, intactThrough: { row: before + 2_000 } });
  });

  it('counts a flush that failed after its INSERT as a drop and leaves no hole in the chain', async () => {
    const before = (await verifyAuditChain(testEnv.db)).headRows;
    const dropsBefore = (await readAuditDrops(testEnv.db)).flushFailed;
    await queue(5, 'lost');
    const w = writer();
    // The marks are stored after the rows in the same transaction: without their table the flush fails after its INSERT.
    await testEnv.db.query(sql.unsafe`ALTER TABLE audit_producer_marks RENAME TO audit_producer_marks_away`);
    try {
      expect(await w.flush()).toMatchObject({ written: 0, dropped: 5 });
    } finally {
      await testEnv.db.query(sql.unsafe`ALTER TABLE audit_producer_marks_away RENAME TO audit_producer_marks`);
    }
    await queue(5, 'kept');
    expect(await w.flush()).toMatchObject({ written: 5 });
    expect((await readAuditDrops(testEnv.db)).flushFailed).toBe(dropsBefore + 5);
    expect(await verifyAuditChain(testEnv.db)).toMatchObject({ intact: true, intactThrough: { row: before + 5 } });
  });
});

describe('the anchor outside the database', () => {
  it('is written to the log stream and to DATA_DIR (mode 0600) when the head moved, and verify matches it', async () => {
    await queue(12, 'anchored');
    const w = writer();
    const capture = createCapturingLogger();
    const keeper = createAnchorKeeper({ head: w.head, db: testEnv.db, key, dataDir, log: capture.log, intervalMs: HOUR });
    expect(await keeper.anchor()).toBeNull(); // nothing written yet by this writer
    await drain(w);
    const anchor = await keeper.anchor();
    expect(anchor).toMatchObject({ rows: w.head()?.seq, hash: w.head()?.hash });
    expect(await readAuditAnchor(dataDir)).toEqual(anchor);
    expect(anchor).toMatchObject({ chainId: w.head()?.chainId, keyId: key.id });
    expect((await stat(auditAnchorPath(dataDir))).mode & 0o777).toBe(0o600);
    const logged = capture.lines().map((line) => JSON.parse(line) as { msg: string; auditAnchor?: unknown });
    expect(logged.filter((line) => line.msg === AUDIT_ANCHOR_LOG_LINE).map((line) => line.auditAnchor)).toEqual([anchor]);
    expect(await keeper.anchor()).toBeNull(); // the head has not moved since

    await queue(3, 'later');
    await drain(w);
    const report = await verifyAuditChain(testEnv.db, { key, anchor: await readAuditAnchor(dataDir) });
    expect(report).toMatchObject({ intact: true, anchor: { matched: true }, unanchoredRows: 3 });
  });

  it('is kept by the running service every AUDIT_ANCHOR_MS and at close', async () => {
    const service = await startAuditWriter(
      loadConfig(auditWriterConfigSchema, testEnv.env({ DATA_DIR: dataDir, AUDIT_FLUSH_MS: '20', AUDIT_ANCHOR_MS: '50' })),
      createCapturingLogger().log,
    );
    try {
      await queue(4, 'service');
      const anchored = await waitFor(
        async () => {
          const [anchor, head] = [await readAuditAnchor(dataDir), service.writer.head()];
          return anchor !== null && head !== null && anchor.hash === head.hash ? anchor : undefined;
        },
        5_000,
        'an anchor of the head',
      );
      expect(await verifyAuditChain(testEnv.db, { key, anchor: anchored })).toMatchObject({ intact: true, anchor: { matched: true }, unanchoredRows: 0 });
      await queue(2, 'at-close');
    } finally {
      await service.close();
    }
    const last = await readAuditAnchor(dataDir);
    expect(await verifyAuditChain(testEnv.db, { key, anchor: last })).toMatchObject({ intact: true, anchor: { matched: true }, unanchoredRows: 0 });
  });
});

/** A row appended by someone who can write the database but holds no key: a plain SHA-256 link, the head moved to it. */
async function forgeAppend(): Promise<void> {
  const head = await readChainHead(testEnv.db);
  const forged = await testEnv.db.one(sql.type(z.object({ id: z.number(), created_at: z.string() }))`
    INSERT INTO audit_log (id, user_id, agent_id, tool, sector, decision, args, result_count, outcome, request_id, created_at)
    VALUES (nextval('audit_log_id_seq'), 1, 'claude', 'query', 'mail', 'allow', '{}', 0, 'ok', 'forged', ${head.createdAt}::timestamptz + interval '1 millisecond')
    RETURNING id, to_char(created_at AT TIME ZONE 'UTC', ${MICROSECOND_UTC}) AS created_at`);
  const content = { seq: head.seq + 1, id: forged.id, userId: 1, agentId: 'claude', tool: 'query', sector: 'mail', decision: 'allow', denyReason: null, args: {}, resultCount: 0, outcome: 'ok', requestId: 'forged', createdAt: forged.created_at };
  const hash = chainHash(head.hash, content);
  await testEnv.db.query(sql.unsafe`UPDATE audit_log SET chain_seq = ${content.seq}, row_hash = decode(${hash}, 'hex') WHERE id = ${forged.id}`);
  await testEnv.db.query(sql.unsafe`
    UPDATE audit_chain SET head_seq = ${content.seq}, head_id = ${forged.id}, head_hash = decode(${hash}, 'hex'), head_created_at = ${forged.created_at}::timestamptz`);
}

describe('the keyed chain the audit-writer keeps', () => {
  it('generates the chain key into DATA_DIR (mode 0600) on first start, links every row with it, and never logs it', async () => {
    const fresh = await mkdtemp(path.join(os.tmpdir(), 'pcg-chain-key-'));
    const capture = createCapturingLogger();
    try {
      const service = await startAuditWriter(loadConfig(auditWriterConfigSchema, testEnv.env({ DATA_DIR: fresh, AUDIT_FLUSH_MS: '20', AUDIT_ANCHOR_MS: HOUR.toString() })), capture.log);
      try {
        await queue(3, 'keyed');
        await waitFor(async () => ((service.writer.stats().written >= 3) ? true : undefined), 5_000, 'the rows written');
      } finally {
        await service.close();
      }
      expect((await stat(auditChainKeyPath(fresh))).mode & 0o777).toBe(0o600);
      const text = (await readFile(path.join(fresh, AUDIT_CHAIN_KEY_FILE), 'utf8')).trim();
      const generated = await loadAuditChainKey(fresh);
      expect(generated.bytes).toHaveLength(32);
      const report = await verifyAuditChain(testEnv.db, { key: generated, anchor: await readAuditAnchor(fresh) });
      expect(report).toMatchObject({ intact: true, keyId: generated.id, anchor: { matched: true, keyId: generated.id }, unanchoredRows: 0 });
      expect(report.firstKeyedRow).not.toBeNull();
      const logged = capture.lines().join('\n');
      expect(logged).not.toContain(text);
      expect(logged).not.toContain(generated.bytes.toString('hex'));
      const stored = await testEnv.db.any(sql.unsafe`SELECT to_jsonb(audit_chain)::text AS row FROM audit_chain`);
      expect(JSON.stringify(stored)).not.toContain(generated.bytes.toString('hex'));
    } finally {
      await rm(fresh, { recursive: true, force: true });
    }
  });

  it('refuses to anchor a head that descends from a forged append, and keeps the last good anchor', async () => {
    const w = writer();
    const capture = createCapturingLogger();
    const keeper = createAnchorKeeper({ head: w.head, db: testEnv.db, key, dataDir, log: capture.log, intervalMs: HOUR });
    await queue(5, 'good');
    await drain(w);
    const good = await keeper.anchor();
    expect(good).not.toBeNull();
    await forgeAppend();
    await queue(2, 'onto-forged');
    await drain(w); // the writer chains its rows onto the forged head
    expect(await keeper.anchor()).toBeNull();
    expect(await readAuditAnchor(dataDir)).toEqual(good);
    const refusals = capture.lines().map((line) => JSON.parse(line) as { msg: string; detail?: string }).filter((line) => line.msg === AUDIT_ANCHOR_REFUSED_LOG_LINE);
    expect(refusals).toHaveLength(1);
    expect(refusals[0]?.detail).toContain("does not carry the chain key's link");
    expect(await verifyAuditChain(testEnv.db, { key, anchor: good })).toMatchObject({ intact: false, break: { kind: 'forged', row: (good?.rows ?? 0) + 1 } });
  });

  it('refuses to anchor a head written onto a tail rewound past the last anchor', async () => {
    const w = writer();
    const capture = createCapturingLogger();
    const keeper = createAnchorKeeper({ head: w.head, db: testEnv.db, key, dataDir, log: capture.log, intervalMs: HOUR });
    await queue(6, 'first');
    await drain(w);
    const good = await keeper.anchor();
    const cutFrom = (good?.rows ?? 0) - 2;
    await testEnv.db.query(sql.unsafe`DELETE FROM audit_log WHERE chain_seq > ${cutFrom}`);
    await testEnv.db.query(sql.unsafe`
      UPDATE audit_chain SET (head_seq, head_id, head_hash, head_created_at) =
        (SELECT chain_seq, id, row_hash, created_at FROM audit_log WHERE chain_seq = ${cutFrom})`);
    await queue(4, 'after-cut');
    await drain(w);
    expect(await keeper.anchor()).toBeNull();
    expect(capture.lines().some((line) => line.includes(AUDIT_ANCHOR_REFUSED_LOG_LINE))).toBe(true);
    expect(await readAuditAnchor(dataDir)).toEqual(good);
    expect(await verifyAuditChain(testEnv.db, { key, anchor: good })).toMatchObject({ intact: false, break: { kind: 'rewritten', row: cutFrom + 1 } });
  });

  it('accepts an anchor file of the old format once and replaces it with one that knows its chain', async () => {
    // Rows of the old, unkeyed chain and their old-format anchor, as the writer left them before the change.
    const old = createAuditWriter({ db: testEnv.db, direct: testEnv.direct, redis: testEnv.redis, log: createCapturingLogger().log, flushMs: HOUR });
    await queue(3, 'old');
    await drain(old);
    const oldHead = await readChainHead(testEnv.db);
    const oldFormat: AuditAnchor = { rows: oldHead.seq, id: oldHead.id, hash: oldHead.hash, createdAt: oldHead.createdAt, writtenAt: new Date().toISOString() };
    await writeFile(auditAnchorPath(dataDir), `${JSON.stringify(oldFormat)}\n`, { mode: 0o600 });
    const w = writer();
    const keeper = createAnchorKeeper({ head: w.head, db: testEnv.db, key, dataDir, log: createCapturingLogger().log, intervalMs: HOUR });
    await queue(2, 'new');
    await drain(w);
    const replaced = await keeper.anchor();
    expect(replaced).toMatchObject({ rows: oldHead.seq + 2, chainId: oldHead.chainId, keyId: key.id, firstKeyedRow: oldHead.seq + 1 });
    expect(await readAuditAnchor(dataDir)).toEqual(replaced);
    expect(await verifyAuditChain(testEnv.db, { key, anchor: replaced })).toMatchObject({ intact: true, firstKeyedRow: oldHead.seq + 1, anchor: { chain: 'this', matched: true } });
  });

  it('replaces an anchor of another chain (this DATA_DIR used with another database), checking this chain from its start', async () => {
    await writeFile(
      auditAnchorPath(dataDir),
      `${JSON.stringify({ rows: 99_999, id: 1, hash: 'a'.repeat(64), createdAt: null, writtenAt: new Date().toISOString(), chainId: 'another-chain', firstHash: 'b'.repeat(64), keyId: key.id, firstKeyedRow: 1 })}\n`,
      { mode: 0o600 },
    );
    expect(await verifyAuditChain(testEnv.db, { key, anchor: await readAuditAnchor(dataDir) })).toMatchObject({ intact: false, break: { kind: 'another_chain' } });
    const w = writer();
    const capture = createCapturingLogger();
    const keeper = createAnchorKeeper({ head: w.head, db: testEnv.db, key, dataDir, log: capture.log, intervalMs: HOUR });
    await queue(2, 'here');
    await drain(w);
    const anchor = await keeper.anchor();
    expect(anchor).toMatchObject({ chainId: w.head()?.chainId });
    expect(capture.lines().some((line) => line.includes('belongs to another chain'))).toBe(true);
    expect(await verifyAuditChain(testEnv.db, { key, anchor })).toMatchObject({ intact: true, anchor: { chain: 'this', matched: true } });
  });

  it('says so when the chain key in DATA_DIR is not the one the last anchor was written under, and anchors nothing past rows it cannot prove', async () => {
    const w = writer();
    await queue(3, 'under-the-key');
    await drain(w);
    const good = await createAnchorKeeper({ head: w.head, db: testEnv.db, key, dataDir, log: createCapturingLogger().log, intervalMs: HOUR }).anchor();
    await queue(2, 'not-yet-anchored');
    await drain(w);
    // The key file was lost and a new one generated: the rows since the last anchor carry the old key's links.
    const elsewhere = await mkdtemp(path.join(os.tmpdir(), 'pcg-new-key-'));
    const replaced = await loadAuditChainKey(elsewhere);
    await rm(elsewhere, { recursive: true, force: true });
    const capture = createCapturingLogger();
    const keeper = createAnchorKeeper({ head: w.head, db: testEnv.db, key: replaced, dataDir, log: capture.log, intervalMs: HOUR });
    expect(await keeper.anchor()).toBeNull();
    const lines = capture.lines().map((line) => JSON.parse(line) as { msg: string; anchorKeyId?: string; keyId?: string });
    expect(lines.find((line) => line.msg === AUDIT_CHAIN_KEY_MISMATCH_LOG_LINE)).toMatchObject({ anchorKeyId: key.id, keyId: replaced.id });
    expect(lines.some((line) => line.msg === AUDIT_ANCHOR_REFUSED_LOG_LINE)).toBe(true);
    expect(await readAuditAnchor(dataDir)).toEqual(good);
  });
});
