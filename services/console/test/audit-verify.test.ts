import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  AUDIT_ANCHOR_FILE,
  AuditLedgerVerificationSchema,
  AuditRowSchema,
  buildAuditRow,
  insertAuditRows,
  readChainHead,
  writeAuditAnchor,
} from '@pcg/shared/audit';
import { loadConfig } from '@pcg/shared/config';
import { auditChainKeyPath, loadAuditChainKey } from '@pcg/shared/crypto';
import { sql } from '@pcg/shared/db';
import { createCapturingLogger, useTestEnvironment } from '@pcg/testkit/testing';
import { buildApp } from '../src/app.ts';
import { consoleConfigSchema } from '../src/config.ts';
import { AUDIT_VERIFY_PATH } from '../src/routes/audit-verify.ts';
import { collectingAudit } from './helpers.ts';

const testEnv = useTestEnvironment();
let app: FastifyInstance;
let dataDir: string;
const audit = collectingAudit();

const verify = async () => {
  const response = await app.inject({ method: 'GET', url: AUDIT_VERIFY_PATH, headers: { host: 'localhost' } });
  expect(response.statusCode).toBe(200);
  return AuditLedgerVerificationSchema.parse(response.json());
};

async function write(count: number, prefix: string): Promise<void> {
  const rows = Array.from({ length: count }, (_, index) =>
    buildAuditRow({ agentId: 'claude', tool: 'get_record', sector: 'contacts', decision: 'allow', outcome: 'ok', args: { id: `c${index}` }, requestId: `${prefix}-${index}` }).row,
  );
  await insertAuditRows(testEnv.db, rows);
}

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'pcg-console-verify-'));
  const config = loadConfig(consoleConfigSchema, testEnv.env({ DATA_DIR: dataDir }));
  app = buildApp({ config, log: createCapturingLogger('console').log, db: testEnv.db, direct: testEnv.direct, redis: testEnv.redis, audit: audit.recorder });
  await app.ready();
});
afterAll(async () => {
  await app.close();
  await rm(dataDir, { recursive: true, force: true });
});
beforeEach(async () => {
  await testEnv.db.query(sql.unsafe`TRUNCATE audit_log`);
  await testEnv.db.query(sql.unsafe`UPDATE audit_chain SET head_seq = 0, head_id = NULL, head_created_at = NULL, head_hash = start_hash`);
  await rm(path.join(dataDir, AUDIT_ANCHOR_FILE), { force: true });
  await rm(auditChainKeyPath(dataDir), { force: true });
});

describe('GET /api/audit/verify', () => {
  it('answers an intact chain with no anchor yet: every row not yet anchored', async () => {
    await write(5, 'a');
    expect(await verify()).toMatchObject({ intact: true, intactThrough: { row: 5 }, anchor: null, anchorFile: 'absent', unanchoredRows: 5 });
  });

  it('compares with the anchor in DATA_DIR and names a tail cut before it', async () => {
    await write(6, 'a');
    const head = await readChainHead(testEnv.db);
    await writeAuditAnchor(dataDir, { rows: head.seq, id: head.id, hash: head.hash, createdAt: head.createdAt, writtenAt: new Date().toISOString() });
    expect(await verify()).toMatchObject({ intact: true, anchorFile: 'present', anchor: { rows: 6, matched: true }, unanchoredRows: 0 });
    await testEnv.db.query(sql.unsafe`DELETE FROM audit_log WHERE chain_seq > 4`);
    expect(await verify()).toMatchObject({ intact: false, break: { kind: 'truncated', row: 5 } });
  });

  it('says which key and which anchor it used and what it proved, and never serves the key', async () => {
    const key = await loadAuditChainKey(dataDir);
    const row = (requestId: string) => buildAuditRow({ agentId: 'claude', tool: 'query', sector: 'mail', decision: 'allow', outcome: 'ok', requestId }).row;
    await insertAuditRows(testEnv.db, [row('k-1'), row('k-2')], { key: key.bytes });
    const head = await readChainHead(testEnv.db);
    const anchor = { rows: head.seq, id: head.id, hash: head.hash, createdAt: head.createdAt, writtenAt: new Date().toISOString(), chainId: head.chainId, firstHash: head.firstHash, keyId: key.id, firstKeyedRow: 1 };
    await writeAuditAnchor(dataDir, anchor);
    const response = await app.inject({ method: 'GET', url: AUDIT_VERIFY_PATH, headers: { host: 'localhost' } });
    const answer = AuditLedgerVerificationSchema.parse(response.json());
    expect(answer).toMatchObject({
      intact: true,
      key: { state: 'present', id: key.id, file: auditChainKeyPath(dataDir) },
      anchorPath: path.join(dataDir, AUDIT_ANCHOR_FILE),
      anchor: { rows: 2, matched: true, chain: 'this', keyId: key.id },
      firstKeyedRow: 1,
      chainId: head.chainId,
    });
    expect(answer.proven).toContain(`with chain key ${key.id}`);
    for (const secret of [key.bytes.toString('base64'), key.bytes.toString('hex')]) expect(response.body).not.toContain(secret);
    // The rows' hashes stay unserved: not the first row's either.
    expect(response.body).not.toContain(head.firstHash ?? 'no first hash');
  });

  it('without the chain key in DATA_DIR says it checked internal consistency only', async () => {
    await write(3, 'a');
    const answer = await verify();
    expect(answer).toMatchObject({ intact: true, key: { state: 'absent', id: null } });
    expect(answer.proven).toMatch(/^internal consistency only/);
  });

  it('reports a damaged anchor file and still walks the chain', async () => {
    await write(2, 'a');
    await writeFile(path.join(dataDir, AUDIT_ANCHOR_FILE), 'not json');
    expect(await verify()).toMatchObject({ intact: true, anchorFile: 'unreadable', anchor: null });
  });

  it('is not recorded (an operator read of the record) and leaves GET /api/audit rows without the chain columns', async () => {
    await write(3, 'a');
    await verify();
    expect(audit.events).toEqual([]);
    const page = await app.inject({ method: 'GET', url: '/api/audit', headers: { host: 'localhost' } });
    const rows = page.json<unknown[]>();
    expect(rows).toHaveLength(3);
    for (const row of rows) expect(Object.keys(row as object).sort()).toEqual(Object.keys(AuditRowSchema.shape).sort());
    expect(page.body).not.toMatch(/chain_seq|row_hash/);
    expect(await testEnv.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM audit_log`)).toBe(3);
  });

  it('sits behind the Host check', async () => {
    const response = await app.inject({ method: 'GET', url: AUDIT_VERIFY_PATH, headers: { host: 'localhost.evil.com' } });
    expect(response.statusCode).toBe(403);
    expect(response.body).toBe('{"error":"forbidden host"}');
  });
});
