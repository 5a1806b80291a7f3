import { describe, expect, it } from 'vitest';
import { canonicalJson, rowScalarsJson } from './audit-chain-fns.ts';
import { encodeAuditCopyRows, encodeAuditCopyTuples, timestamptzBinary } from './audit-copy-binary.ts';
import { buildAuditRow } from './audit-fns.ts';
import { readQueueChunk, type ReadChunk } from './audit-queue-read.ts';
import { createQueueReader, readQueueBatchHere } from './audit-queue-reader.ts';
import type { QueuedAuditRow } from './audit-types.ts';

const row = (requestId: string, argsJson = '{"b":1,"a":[2]}'): QueuedAuditRow => ({
  ...buildAuditRow({ agentId: 'claude', tool: 'query', sector: 'finance', decision: 'allow', outcome: 'ok', resultCount: 3, requestId }).row,
  argsJson,
});
const entry = (queued: QueuedAuditRow, numbering: object = {}) => JSON.stringify({ ...queued, ...numbering });
/** A chunk's producer numbers as one object an entry, in queue order. */
const numbering = ({ marks }: ReadChunk) =>
  Array.from(marks.seq, (seq, index) => ({
    producer: marks.producers[marks.producer[index]!],
    seq,
    after: Number.isNaN(marks.after[index]) ? null : marks.after[index],
    readable: marks.readable[index] === -1 ? null : marks.readable[index],
  }));
const CREATED_AT = timestamptzBinary('2026-11-27T10:00:00.123456Z');
const place = (index: number) => ({ id: 100 + index, seq: 10 + index, hash: index.toString(16).padStart(64, '0') });

describe('reading a chunk of queue entries', () => {
  it('keeps each readable row in queue order with its scalars, canonical args and own COPY fields', () => {
    const rows = [row('a'), row('b', '{"z":{"y":true,"x":null}}')];
    const chunk = readQueueChunk(rows.map((queued, index) => entry(queued, { producer: 'gw', seq: index + 1 })));
    expect(chunk).toMatchObject({ taken: 2, unreadable: 0 });
    expect(chunk.scalars).toEqual(rows.map(rowScalarsJson));
    expect(chunk.canonical).toEqual(['{"a":[2],"b":1}', '{"z":{"x":null,"y":true}}']);
    expect(numbering(chunk)).toEqual([
      { producer: 'gw', seq: 1, after: null, readable: 0 },
      { producer: 'gw', seq: 2, after: null, readable: 1 },
    ]);
    // The fields and the chain's part make the same tuples as encoding whole rows.
    const whole = encodeAuditCopyRows(rows.map((queued, index) => ({ ...place(index), row: queued })), CREATED_AT);
    const places = { ids: [place(0).id, place(1).id], seqs: [place(0).seq, place(1).seq], hashes: [place(0).hash, place(1).hash] };
    expect(encodeAuditCopyTuples(places, chunk.fields, [0, 1], CREATED_AT).equals(whole)).toBe(true);
  });

  it('counts as unreadable an entry that is not JSON, not a queued row, or whose args are not JSON, and keeps the producer number of those that have one', () => {
    const chunk = readQueueChunk([
      'not json',
      entry(row('other'), { producer: 'console', seq: 7 }),
      entry(row('a')),
      JSON.stringify({ tool: 'query', producer: 'gw', seq: 2 }),
      entry(row('bad-args', '{"not json'), { producer: 'gw', seq: 3, after: 1 }),
      entry(row('b'), { producer: 'gw', seq: 4 }),
    ]);
    expect(chunk).toMatchObject({ taken: 6, unreadable: 3 });
    expect(chunk.scalars).toEqual([rowScalarsJson(row('other')), rowScalarsJson(row('a')), rowScalarsJson(row('b'))]);
    expect(numbering(chunk)).toEqual([
      { producer: 'console', seq: 7, after: null, readable: 0 },
      { producer: 'gw', seq: 2, after: null, readable: null },
      { producer: 'gw', seq: 3, after: 1, readable: null },
      { producer: 'gw', seq: 4, after: null, readable: 2 },
    ]);
  });

  it('encodes only the rows picked, in the order given, each with its own place', () => {
    const rows = [row('a'), row('b'), row('c')];
    const chunk = readQueueChunk(rows.map((queued) => entry(queued)));
    const places = { ids: [place(0).id, place(1).id], seqs: [place(0).seq, place(1).seq], hashes: [place(0).hash, place(1).hash] };
    const picked = encodeAuditCopyTuples(places, chunk.fields, [0, 2], CREATED_AT);
    const expected = encodeAuditCopyRows([{ ...place(0), row: rows[0]! }, { ...place(1), row: rows[2]! }], CREATED_AT);
    expect(picked.equals(expected)).toBe(true);
  });

  it('refuses a place that is not 32 bytes of hex, or an id that is not a safe integer', () => {
    const chunk = readQueueChunk([entry(row('a'))]);
    expect(() => encodeAuditCopyTuples({ ids: [1], seqs: [1], hashes: ['ab'] }, chunk.fields, [0], CREATED_AT)).toThrow(new RangeError('a row hash is not 32 bytes in hex'));
    expect(() => encodeAuditCopyTuples({ ids: [2 ** 53], seqs: [1], hashes: [place(0).hash] }, chunk.fields, [0], CREATED_AT)).toThrow(RangeError);
  });
});

describe('the queue reader', () => {
  const entries = (count: number) => Array.from({ length: count }, (_, index) => entry(row(`r-${index}`, JSON.stringify({ n: index, a: 'x' }))));

  it('reads a large batch on its helper thread, chunk by chunk, the same as on the writer thread', async () => {
    const reader = createQueueReader();
    try {
      const batch = entries(2_500);
      const chunks = await reader.read(batch);
      expect(chunks.map((chunk) => chunk.taken)).toEqual([1_000, 1_000, 500]);
      expect(chunks).toEqual(readQueueBatchHere(batch));
      expect(chunks[2]?.canonical[499]).toBe(canonicalJson({ a: 'x', n: 2_499 }));
    } finally {
      await reader.close();
    }
  });

  it('reads the batch on the writer thread when the helper thread stops midway: reading never loses a batch', async () => {
    const reader = createQueueReader();
    const batch = entries(5_000);
    const reading = reader.read(batch);
    await reader.close();
    expect(await reading).toEqual(readQueueBatchHere(batch));
    // The next large batch starts a new thread.
    expect(await reader.read(entries(2_000))).toEqual(readQueueBatchHere(entries(2_000)));
    await reader.close();
  });
});
