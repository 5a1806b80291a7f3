import { randomUUID } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';

/**
 * The producer's local copy of every row it has numbered and not yet seen written (design 8.4): one file per
 * process kind in `DATA_DIR/audit-spool/`. Each row is appended as the queue entry it will be (producer and
 * sequence number written in) before it is sent; a row Redis refused for lack of room is noted as refused;
 * the file is rewritten without the rows the writer has stored. Appends are plain writes, never fsynced:
 * the file survives a crash of the process, not a power cut.
 */
export type AuditSpool = {
  /** The producer identity kept in the file, the same across restarts. */
  readonly producerId: string;
  /** The sequence number the next row gets. */
  readonly nextSeq: number;
  /** Rows left by an earlier process, in sequence order, still to be sent (some may already be written). */
  readonly left: ReadonlyArray<{ seq: number; entry: string }>;
  /** Highest sequence number ever given up unwritten (evicted from a full spool); 0 if none. */
  readonly evicted: number;
  /** Losses an earlier process counted and had not stored in Postgres when it stopped, by reason. */
  readonly unstoredDrops: Record<string, number>;
  /**
   * Keeps the losses counted and not yet stored in Postgres beside the spool (`<source>.drops`), so a
   * process that dies before Postgres takes them leaves them to the next one.
   */
  saveDrops(counts: Record<string, number>): void;
  /** Appends one entry; throws when the disk does not take it. */
  append(entry: string): void;
  /** Notes sequence numbers Redis refused (spec 8: dropped, never sent again). */
  refused(from: number, to: number): void;
  /** Rewrites the file with only these entries (the rows not yet known to be written). */
  compact(state: { nextSeq: number; evicted: number; entries: ReadonlyArray<{ seq: number; entry: string }> }): void;
  close(): void;
};

const HeaderSchema = z.object({ spool: z.literal(1), producer: z.string().min(1), next: z.number().int().positive(), evicted: z.number().int().nonnegative() });
const RefusedSchema = z.object({ refused: z.tuple([z.number().int(), z.number().int()]) });
const EntrySeqSchema = z.object({ producer: z.string(), seq: z.number().int().positive() });

/** Spool files open in this process: two producers must never share one (their numbers would collide). */
const openHere = new Set<string>();

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes `<file>.lock` for this process, or returns false when a live process holds it. */
function takeLock(lockFile: string): boolean {
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      const fd = openSync(lockFile, 'wx', 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = Number(readFileSync(lockFile, 'utf8'));
      if (holder !== process.pid && Number.isInteger(holder) && holder > 0 && processAlive(holder)) return false;
      rmSync(lockFile, { force: true });
    }
  }
  return false;
}

type Loaded = { producerId: string; nextSeq: number; evicted: number; left: Array<{ seq: number; entry: string }>; unreadable: number };

function load(file: string, source: string): Loaded {
  let text = '';
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const loaded: Loaded = { producerId: `${source}-${randomUUID()}`, nextSeq: 1, evicted: 0, left: [], unreadable: 0 };
  const refused = new Set<number>();
  const entries = new Map<number, string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      // Only a line cut short by a lost write can be unparsable: counted by the caller.
      loaded.unreadable += 1;
      continue;
    }
    const header = HeaderSchema.safeParse(value);
    if (header.success) {
      Object.assign(loaded, { producerId: header.data.producer, nextSeq: header.data.next, evicted: header.data.evicted });
      continue;
    }
    const refusal = RefusedSchema.safeParse(value);
    if (refusal.success) {
      for (let seq = refusal.data.refused[0]; seq <= refusal.data.refused[1]; seq += 1) refused.add(seq);
      continue;
    }
    const entry = EntrySeqSchema.safeParse(value);
    if (entry.success && entry.data.producer === loaded.producerId) entries.set(entry.data.seq, line);
    else loaded.unreadable += 1;
  }
  for (const [seq, entry] of [...entries].sort(([a], [b]) => a - b)) {
    loaded.nextSeq = Math.max(loaded.nextSeq, seq + 1);
    if (!refused.has(seq)) loaded.left.push({ seq, entry });
  }
  return loaded;
}

/**
 * Opens (creating) `<dir>/<source>.jsonl`, reads what an earlier process left, and rewrites it. Returns
 * undefined when another live process of this data folder holds it; throws when the folder is unusable.
 */
export function openAuditSpool(dir: string, source: string): (AuditSpool & { unreadable: number }) | undefined {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, `${source}.jsonl`);
  if (openHere.has(file) || !takeLock(`${file}.lock`)) return undefined;
  openHere.add(file);
  const loaded = load(file, source);
  const dropsFile = `${file.slice(0, -'.jsonl'.length)}.drops`;
  let unstoredDrops: Record<string, number> = {};
  try {
    unstoredDrops = z.record(z.string(), z.number().int().nonnegative()).catch({}).parse(JSON.parse(readFileSync(dropsFile, 'utf8')));
  } catch {
    // None left, or a file cut short: nothing to carry over.
  }
  let fd = -1;
  const spool: AuditSpool & { unreadable: number } = {
    producerId: loaded.producerId,
    nextSeq: loaded.nextSeq,
    left: loaded.left,
    evicted: loaded.evicted,
    unreadable: loaded.unreadable,
    unstoredDrops,
    saveDrops(counts) {
      const pending = Object.fromEntries(Object.entries(counts).filter(([, rows]) => rows > 0));
      if (Object.keys(pending).length === 0) rmSync(dropsFile, { force: true });
      else writeFileSync(dropsFile, JSON.stringify(pending), { mode: 0o600 });
    },
    append(entry) {
      writeSync(fd, `${entry}\n`);
    },
    refused(from, to) {
      writeSync(fd, `${JSON.stringify({ refused: [from, to] })}\n`);
    },
    compact({ nextSeq, evicted, entries }) {
      const header = JSON.stringify({ spool: 1, producer: loaded.producerId, next: nextSeq, evicted });
      // A new file renamed over the old one: a crash leaves one or the other whole, never neither.
      writeFileSync(`${file}.tmp`, [header, ...entries.map((held) => held.entry), ''].join('\n'), { mode: 0o600 });
      renameSync(`${file}.tmp`, file);
      if (fd >= 0) closeSync(fd);
      fd = openSync(file, 'a');
    },
    close() {
      if (fd >= 0) closeSync(fd);
      fd = -1;
      openHere.delete(file);
      rmSync(`${file}.lock`, { force: true });
    },
  };
  spool.compact({ nextSeq: loaded.nextSeq, evicted: loaded.evicted, entries: loaded.left });
  return spool;
}
