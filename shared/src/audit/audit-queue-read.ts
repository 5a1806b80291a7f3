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
  /** Each entry that names its producer and number (readable or not), by its index among `taken`. */
  marks: Array<{ entry: number; producer: string; seq: number; after?: number | undefined; readable: number | null }>;
  /** Per readable row (its index among readable rows): `rowScalarsJson` and `canonicalJson` of its args. */
  scalars: string[];
  canonical: string[];
  fields: EncodedRowFields;
};

/** The producer's numbering of an entry that is JSON but not a readable row, when it has one. */
const NumberingSchema = z.object({ producer: z.string().min(1), seq: z.number().int().positive(), after: z.number().int().nonnegative().optional() });

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}

/** Reads one chunk of queue entries: parses and checks each, puts its args in canonical form and encodes its fields. */
export function readQueueChunk(entries: readonly string[]): ReadChunk {
  const rows: QueuedAuditEntry[] = [];
  const marks: ReadChunk['marks'] = [];
  const scalars: string[] = [];
  const canonical: string[] = [];
  entries.forEach((text, entry) => {
    const json = parseJson(text);
    if (!json.ok) return;
    const row = QueuedAuditEntrySchema.safeParse(json.value);
    const args = row.success ? parseJson(row.data.argsJson) : null;
    const readable = row.success && args?.ok === true;
    if (readable) {
      scalars.push(rowScalarsJson(row.data));
      canonical.push(canonicalJson(args.value));
      rows.push(row.data);
    }
    const numbering = row.success ? row.data : NumberingSchema.safeParse(json.value).data;
    if (numbering?.producer !== undefined && numbering.seq !== undefined) {
      marks.push({ entry, producer: numbering.producer, seq: numbering.seq, after: numbering.after, readable: readable ? rows.length - 1 : null });
    }
  });
  return { taken: entries.length, unreadable: entries.length - rows.length, marks, scalars, canonical, fields: encodeAuditRowFields(rows) };
}
