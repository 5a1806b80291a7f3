import { z } from 'zod';
import { canonicalJson, rowScalarsJson } from './audit-chain-fns.ts';
import { encodeAuditRowFields, type EncodedRowFields } from './audit-copy-binary.ts';
import { QueuedAuditEntrySchema, type QueuedAuditEntry } from './audit-types.ts';

/** Queue entries read at a time: one helper thread message, one COPY write. */
export const READ_CHUNK_ENTRIES = 1_000;

/**
 * A chunk of queue entries read for writing (issue 44), in queue order. Every entry is either readable
 * (a queued row whose args are JSON) or unreadable; both kinds may carry the producer's sequence number
 * the enqueue script gave them (`marks`), so the writer's accounting sees every number it took. For the
 * readable ones, in the same order: what the chain's link covers (scalars and canonical args, computed
 * before the head is locked) and their own COPY fields (`encodeAuditRowFields`).
 */
export type ReadChunk = {
  /** Entries taken. */
  taken: number;
  /** Entries that are not JSON, not a queued row, or whose args are not JSON. */
  unreadable: number;
  /**
   * Each entry that names its producer and number (readable or not), in queue order, as parallel arrays
   * (they cross between threads without a copy): its producer (an index into `producers`), its number, the
   * number before it when the entry says (else NaN), and its index among readable rows (else -1).
   */
  marks: { producers: string[]; producer: Int32Array<ArrayBuffer>; seq: Float64Array<ArrayBuffer>; after: Float64Array<ArrayBuffer>; readable: Int32Array<ArrayBuffer> };
  /** Per readable row (its index among readable rows): `rowScalarsJson` and `canonicalJson` of its args. */
  scalars: string[];
  canonical: string[];
  fields: EncodedRowFields;
};

/** The memory of a chunk's arrays, which a thread hands over rather than copies. */
export const readChunkTransfers = (chunk: ReadChunk): ArrayBuffer[] => [
  chunk.fields.bytes.buffer,
  chunk.fields.ends.buffer,
  chunk.marks.producer.buffer,
  chunk.marks.seq.buffer,
  chunk.marks.after.buffer,
  chunk.marks.readable.buffer,
];

/** The producer's numbering of an entry that is JSON but not a readable row, when it has one. */
const NumberingSchema = z.object({ producer: z.string().min(1), seq: z.number().int().positive(), after: z.number().int().nonnegative().optional() });

const NOT_JSON = Symbol('not JSON');

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return NOT_JSON;
  }
}

/** Reads one chunk of queue entries: parses and checks each, puts its args in canonical form and encodes its fields. */
export function readQueueChunk(entries: readonly string[]): ReadChunk {
  const rows: QueuedAuditEntry[] = [];
  const scalars: string[] = [];
  const canonical: string[] = [];
  const producers = new Map<string, number>();
  const marks = {
    producer: new Int32Array(entries.length),
    seq: new Float64Array(entries.length),
    after: new Float64Array(entries.length),
    readable: new Int32Array(entries.length),
  };
  let marked = 0;
  for (const text of entries) {
    const json = parseJson(text);
    if (json === NOT_JSON) continue;
    const row = QueuedAuditEntrySchema.safeParse(json);
    const args = row.success ? parseJson(row.data.argsJson) : NOT_JSON;
    const readable = row.success && args !== NOT_JSON;
    if (readable) {
      scalars.push(rowScalarsJson(row.data));
      canonical.push(canonicalJson(args));
      rows.push(row.data);
    }
    const numbering = row.success ? row.data : NumberingSchema.safeParse(json).data;
    if (numbering?.producer === undefined || numbering.seq === undefined) continue;
    let producer = producers.get(numbering.producer);
    if (producer === undefined) producers.set(numbering.producer, (producer = producers.size));
    marks.producer[marked] = producer;
    marks.seq[marked] = numbering.seq;
    marks.after[marked] = numbering.after ?? Number.NaN;
    marks.readable[marked] = readable ? rows.length - 1 : -1;
    marked += 1;
  }
  const kept = <T extends Int32Array<ArrayBuffer> | Float64Array<ArrayBuffer>>(array: T): T => array.slice(0, marked) as T;
  return {
    taken: entries.length,
    unreadable: entries.length - rows.length,
    marks: { producers: [...producers.keys()], producer: kept(marks.producer), seq: kept(marks.seq), after: kept(marks.after), readable: kept(marks.readable) },
    scalars,
    canonical,
    fields: encodeAuditRowFields(rows),
  };
}
