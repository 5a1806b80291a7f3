import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { sql } from '../db/index.ts';
import { useTestEnvironment } from '@pcg/testkit/testing';
import { canonicalChunksHere, COPY_CHUNK_ROWS } from './audit-canonical-args.ts';
import { copyChainedAuditRows, statementsOn } from './audit-chain-copy.ts';
import { insertChainedAuditRows, readChainHead } from './audit-chain-queries.ts';
import { verifyAuditChain } from './audit-chain-verify.ts';
import { walkLedger, type WalkedRow } from './audit-chain-walk.ts';
import { buildAuditRow } from './audit-fns.ts';
import type { QueuedAuditRow } from './audit-types.ts';

const testEnv = useTestEnvironment();
const key = randomBytes(32);
let client: pg.PoolClient;

function rows(count: number, prefix: string): QueuedAuditRow[] {
  return Array.from({ length: count }, (_, index) =>
    buildAuditRow({
      agentId: index % 2 === 0 ? 'claude' : null,
      tool: 'query',
      sector: index % 3 === 0 ? null : 'finance',
      decision: index % 2 === 0 ? 'allow' : 'deny',
      denyReason: index % 2 === 0 ? null : 'sector not granted',
      outcome: 'ok',
      args: { zeta: index, alpha: [{ b: 1, a: `${prefix}-${index}` }] },
      resultCount: index,
      requestId: `${prefix}-${index}`,
    }).row,
  );
}

/**
 * One flush as the audit-writer sends it: a transaction on a plain pg connection, the rows in one COPY. After
 * a failure the connection is discarded, as the writer does (the server then rolls the transaction back).
 */
async function copyFlush(batch: QueuedAuditRow[], options: { key?: Buffer | null; canonical?: ReturnType<typeof canonicalChunksHere> } = {}) {
  await client.query('BEGIN');
  try {
    const result = await copyChainedAuditRows(client, batch, options.canonical ?? canonicalChunksHere(batch), { key: options.key });
    await client.query('COMMIT');
    return result;
  } catch (error) {
    client.release(error instanceof Error ? error : new Error(String(error)));
    client = await testEnv.direct.connect();
    throw error;
  }
}

/** Every row stored, in the ledger's order, as the chain's own walk reads it. */
async function stored(): Promise<WalkedRow[]> {
  const walked: WalkedRow[] = [];
  for await (const row of walkLedger(testEnv.db, null, 5000)) walked.push(row);
  return walked;
}

beforeEach(async () => {
  await testEnv.db.query(sql.unsafe`TRUNCATE audit_log`);
  await testEnv.db.query(sql.unsafe`
    UPDATE audit_chain SET start_id = NULL, start_created_at = NULL, legacy_rows = 0, first_keyed_seq = NULL,
      head_seq = 0, head_id = NULL, head_created_at = NULL, head_hash = start_hash, first_hash = NULL`);
  // The audit-writer's own route: pg's pool beside the slonik pool, with the same type parsers.
  client = await testEnv.direct.connect();
});
afterEach(() => client.release());

describe('a flush written with one COPY', () => {
  it('stores every column as given and links the rows into a chain verify accepts, keyed or not', async () => {
    const batch = rows(5, 'a');
    expect((await copyFlush(batch)).written).toBe(5);
    const written = await copyFlush(rows(4, 'b'), { key });
    expect(written.written).toBe(4);
    expect(written.head).toEqual(await readChainHead(testEnv.db));
    expect(written.head).toMatchObject({ seq: 9 });
    const report = await verifyAuditChain(testEnv.db, { key: { bytes: key, id: 'k' } });
    expect(report).toMatchObject({ intact: true, intactThrough: { row: 9 }, firstKeyedRow: 6, headRows: 9 });
    const first = (await stored()).slice(0, 5);
    expect(first.map((row) => row.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(first.map(({ userId, agentId, tool, sector, decision, denyReason, args, resultCount, outcome, requestId }) => ({
      userId, agentId, tool, sector, decision, denyReason, args, resultCount, outcome, requestId,
    }))).toEqual(batch.map(({ argsJson, ...row }) => ({ ...row, args: JSON.parse(argsJson) as unknown })));
  });

  it('writes the very rows and links the INSERT would', async () => {
    const batch = rows(3, 'same');
    await copyFlush(batch, { key });
    const copied = await stored();
    const head = await readChainHead(testEnv.db);
    await testEnv.db.query(sql.unsafe`TRUNCATE audit_log`);
    await testEnv.db.query(sql.unsafe`UPDATE audit_chain SET head_seq = 0, head_id = NULL, head_created_at = NULL, head_hash = start_hash, first_hash = NULL, first_keyed_seq = NULL`);
    await testEnv.db.transaction(async (tx) => insertChainedAuditRows(tx, batch, { key }));
    const inserted = await stored();
    // The ids and created_at differ (another transaction), so the links do; all else is the same.
    const content = (rows: WalkedRow[]) => rows.map(({ hash: _hash, id: _id, createdAt: _createdAt, ...row }) => row);
    expect(content(inserted)).toEqual(content(copied));
    expect(head.seq).toBe(3);
  });

  it('links across chunks of rows, each chunk sent as it is encoded', async () => {
    const batch = rows(COPY_CHUNK_ROWS * 2 + 7, 'big');
    expect((await copyFlush(batch, { key })).written).toBe(batch.length);
    expect(await verifyAuditChain(testEnv.db, { key: { bytes: key, id: 'k' } })).toMatchObject({ intact: true, intactThrough: { row: batch.length }, firstKeyedRow: 1 });
  });

  it('writes nothing for an empty batch and leaves the head where it was', async () => {
    await copyFlush(rows(2, 'a'));
    const before = await readChainHead(testEnv.db);
    expect(await copyFlush([])).toEqual({ written: 0, head: before });
    expect(await readChainHead(testEnv.db)).toEqual(before);
  });

  it('fails, writing nothing, when a chunk has no canonical args', async () => {
    await expect(copyFlush(rows(2, 'a'), { canonical: [] })).rejects.toThrow(new RangeError('a chunk of rows has no canonical args'));
    expect(await stored()).toEqual([]);
    expect((await readChainHead(testEnv.db)).seq).toBe(0);
  });

  it('fails, writing nothing, when Postgres refuses a row', async () => {
    const batch = rows(2, 'a');
    // Postgres text cannot hold a NUL character.
    const refused = [batch[0]!, { ...batch[1]!, tool: 'que\u0000ry' }];
    await expect(copyFlush(refused)).rejects.toThrow(/0x00/);
    expect(await stored()).toEqual([]);
    expect((await readChainHead(testEnv.db)).seq).toBe(0);
  });
});

describe('slonik statements on a plain pg connection', () => {
  const Row = z.object({ n: z.number() });

  it('runs a query with slonik\'s result shape', async () => {
    const result = await statementsOn(client).query(sql.unsafe`SELECT ${2}::int AS n UNION ALL SELECT 3`);
    expect(result).toMatchObject({ rowCount: 2, rows: [{ n: 2 }, { n: 3 }], command: 'SELECT', notices: [] });
    expect(result.fields.map((field) => field.name)).toEqual(['n']);
  });

  it('reads one row, checked by its schema', async () => {
    const statements = statementsOn(client);
    expect(await statements.one(sql.type(Row)`SELECT ${7}::int AS n`)).toEqual({ n: 7 });
    expect(await statements.one(sql.unsafe`SELECT 'x' AS n`)).toEqual({ n: 'x' });
    await expect(statements.one(sql.type(Row)`SELECT 'x' AS n`)).rejects.toThrow(new TypeError('a row did not match its schema'));
    await expect(statements.one(sql.type(Row.refine(async () => true))`SELECT 1 AS n`)).rejects.toThrow(new TypeError('a row did not match its schema'));
  });

  it('refuses no row or several where one is expected', async () => {
    const statements = statementsOn(client);
    await expect(statements.one(sql.type(Row)`SELECT 1 AS n WHERE false`)).rejects.toThrow(new Error('expected one row, got 0'));
    await expect(statements.one(sql.type(Row)`SELECT 1 AS n UNION ALL SELECT 2`)).rejects.toThrow(new Error('expected one row, got 2'));
  });
});
