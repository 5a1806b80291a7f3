import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditLedgerVerificationSchema, buildAuditRow, insertAuditRows, readChainHead, writeAuditAnchor } from '@pcg/shared/audit';
import { loadAuditChainKey } from '@pcg/shared/crypto';
import { sql } from '@pcg/shared/db';
import { useTestEnvironment } from '@pcg/testkit/testing';
import { AUDIT_VERIFY_EXIT } from '../../scripts/audit-verify.ts';

const testEnv = useTestEnvironment();
const root = path.resolve(import.meta.dirname, '../..');
let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'pcg-verify-script-'));
});
afterAll(async () => rm(dataDir, { recursive: true, force: true }));

/** `npm run audit:verify` as the operator runs it, against this file's database. */
function runScript(args: string[]): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [path.join(root, 'scripts/audit-verify.ts'), ...args], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', DATABASE_URL: testEnv.databaseUrl, DATA_DIR: dataDir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, output })));
}

describe('npm run audit:verify', () => {
  it('prints an intact chain and exits 0, then names an edited row and exits 2', async () => {
    const rows = Array.from({ length: 4 }, (_, index) =>
      buildAuditRow({ agentId: 'claude', tool: 'query', sector: 'home', decision: 'allow', outcome: 'ok', args: { index }, requestId: `s-${index}` }).row,
    );
    await insertAuditRows(testEnv.db, rows);
    const intact = await runScript([]);
    expect(intact.output).toContain('audit chain intact: intact up to row 4');
    expect(intact.output).toContain('4 rows after the last anchor are not yet anchored');
    expect(intact.code).toBe(AUDIT_VERIFY_EXIT.intact);

    await testEnv.db.query(sql.unsafe`UPDATE audit_log SET args = '{"index": 9}' WHERE chain_seq = 3`);
    const broken = await runScript(['--json']);
    expect(broken.code).toBe(AUDIT_VERIFY_EXIT.broken);
    const report = AuditLedgerVerificationSchema.parse(JSON.parse(broken.output.slice(broken.output.indexOf('{'))));
    expect(report).toMatchObject({ intact: false, intactThrough: { row: 2 }, break: { kind: 'edited', row: 3 } });
  });

  it('names the chain key and the anchor it used and what it proved; an anchor of another database is said to belong to another chain', async () => {
    const key = await loadAuditChainKey(dataDir);
    await testEnv.db.query(sql.unsafe`TRUNCATE audit_log`);
    await testEnv.db.query(sql.unsafe`UPDATE audit_chain SET head_seq = 0, head_id = NULL, head_created_at = NULL, head_hash = start_hash`);
    const rows = Array.from({ length: 3 }, (_, index) =>
      buildAuditRow({ agentId: 'claude', tool: 'query', sector: 'home', decision: 'allow', outcome: 'ok', args: { index }, requestId: `k-${index}` }).row,
    );
    await insertAuditRows(testEnv.db, rows, { key: key.bytes });
    const head = await readChainHead(testEnv.db);
    const anchor = { rows: head.seq, id: head.id, hash: head.hash, createdAt: head.createdAt, writtenAt: new Date().toISOString(), chainId: head.chainId, firstHash: head.firstHash, keyId: key.id, firstKeyedRow: 1 };
    await writeAuditAnchor(dataDir, anchor);
    const intact = await runScript([]);
    expect(intact.code).toBe(AUDIT_VERIFY_EXIT.intact);
    expect(intact.output).toContain(`proven: with chain key ${key.id}`);
    expect(intact.output).toContain(`chain key: ${key.id} (${key.file})`);
    expect(intact.output).toContain('last anchor: 3 rows');
    expect(intact.output).toContain('first keyed row: 1');

    await writeAuditAnchor(dataDir, { ...anchor, rows: 50, chainId: 'a-chain-of-another-database', firstHash: 'f'.repeat(64) });
    const foreign = await runScript([]);
    expect(foreign.code).toBe(AUDIT_VERIFY_EXIT.broken);
    expect(foreign.output).toContain('this anchor belongs to another chain');
    expect(foreign.output).not.toContain('truncated');
  });
});
