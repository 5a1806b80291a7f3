import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  AUDIT_ANCHOR_LOG_LINE,
  AUDIT_QUEUE_KEY,
  auditAnchorPath,
  createAuditProducer,
  readAuditAnchor,
  readAuditDrops,
  verifyAuditChain,
  type AuditProducer,
} from '@pcg/shared/audit';
import { loadConfig } from '@pcg/shared/config';
import { sql } from '@pcg/shared/db';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { createAnchorKeeper } from '../src/anchor.ts';
import { auditWriterConfigSchema } from '../src/config.ts';
import { startAuditWriter } from '../src/service.ts';
import { createAuditWriter } from '../src/writer.ts';

const testEnv = useTestEnvironment();
const HOUR = 3_600_000;
let producer: AuditProducer;
let dataDir: string;

async function queue(count: number, prefix: string): Promise<void> {
  for (let index = 0; index < count; index += 1) {
    producer.record({ agentId: 'claude', tool: 'query', sector: 'mail', decision: 'allow', outcome: 'ok', args: { n: index, object: 'mail.messages' }, requestId: `${prefix}-${index}` });
  }
  await producer.drain();
}

const writer = (batchSize = 10_000) =>
  createAuditWriter({ db: testEnv.db, redis: testEnv.redis, log: createCapturingLogger().log, flushMs: HOUR, batchSize });

async function drain(w: ReturnType<typeof writer>): Promise<void> {
  while ((await w.flush()).taken > 0);
}

beforeEach(async () => {
  await testEnv.redis.del(AUDIT_QUEUE_KEY);
  producer = createAuditProducer({ redis: testEnv.redis, settings: { AUDIT_QUEUE_CAPACITY: 100_000 }, log: createCapturingLogger().log });
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'pcg-anchor-'));
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
    const report = await verifyAuditChain(testEnv.db);
    expect(report).toMatchObject({ intact: true });
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
    const keeper = createAnchorKeeper({ head: w.head, dataDir, log: capture.log, intervalMs: HOUR });
    expect(await keeper.anchor()).toBeNull(); // nothing written yet by this writer
    await drain(w);
    const anchor = await keeper.anchor();
    expect(anchor).toMatchObject({ rows: w.head()?.seq, hash: w.head()?.hash });
    expect(await readAuditAnchor(dataDir)).toEqual(anchor);
    expect((await stat(auditAnchorPath(dataDir))).mode & 0o777).toBe(0o600);
    const logged = capture.lines().map((line) => JSON.parse(line) as { msg: string; auditAnchor?: unknown });
    expect(logged.filter((line) => line.msg === AUDIT_ANCHOR_LOG_LINE).map((line) => line.auditAnchor)).toEqual([anchor]);
    expect(await keeper.anchor()).toBeNull(); // the head has not moved since

    await queue(3, 'later');
    await drain(w);
    const report = await verifyAuditChain(testEnv.db, { anchor: await readAuditAnchor(dataDir) });
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
      expect(await verifyAuditChain(testEnv.db, { anchor: anchored })).toMatchObject({ intact: true, anchor: { matched: true }, unanchoredRows: 0 });
      await queue(2, 'at-close');
    } finally {
      await service.close();
    }
    const last = await readAuditAnchor(dataDir);
    expect(await verifyAuditChain(testEnv.db, { anchor: last })).toMatchObject({ intact: true, anchor: { matched: true }, unanchoredRows: 0 });
  });
});
