import { Worker } from 'node:worker_threads';
import { canonicalJson } from './audit-chain-fns.ts';
import type { QueuedAuditRow } from './audit-types.ts';

/** Rows linked and encoded at a time while a flush's COPY is open; canonical args are computed in the same chunks. */
export const COPY_CHUNK_ROWS = 1_000;
/** Below this a batch's args are put in canonical form on the writer's own thread: a message round trip would cost more. */
const HELPER_MIN_ROWS = 2 * COPY_CHUNK_ROWS;

/** A batch's canonical args, one promise per chunk of `COPY_CHUNK_ROWS` rows, in order. Each rejects if an `argsJson` is not JSON. */
export type CanonicalChunks = ReadonlyArray<Promise<readonly string[]>>;

const canonicalOf = (rows: readonly QueuedAuditRow[]) => rows.map((row) => canonicalJson(JSON.parse(row.argsJson) as unknown));

/** Every chunk computed at once on this thread (small batches, tests, the fallback). */
export function canonicalChunksHere(rows: readonly QueuedAuditRow[]): CanonicalChunks {
  const chunks: Array<Promise<readonly string[]>> = [];
  for (let start = 0; start < rows.length; start += COPY_CHUNK_ROWS) {
    try {
      chunks.push(Promise.resolve(canonicalOf(rows.slice(start, start + COPY_CHUNK_ROWS))));
    } catch (error) {
      const failed = Promise.reject(error instanceof Error ? error : new Error(String(error)));
      failed.catch(() => undefined);
      chunks.push(failed);
    }
  }
  return chunks;
}

type Reply = { id: number; canonical?: string[]; error?: string };

/**
 * Puts a large batch's args in canonical form on a helper thread, a chunk at a time, while the writer's
 * own thread links the chunks already done and Postgres stores the ones before (issue 44): parsing and
 * ordering `args` is the largest part of a flush's work that needs no chain head. The thread is started on
 * the first large batch and keeps the process alive only while chunks are out. Every chunk's promise has a handler attached,
 * so a chunk nobody awaits (its flush failed first) is not an unhandled rejection.
 */
export function createCanonicalArgsHelper() {
  let worker: Worker | undefined;
  let nextId = 0;
  const waiting = new Map<number, { resolve: (canonical: string[]) => void; reject: (error: Error) => void }>();

  function failAll(error: Error): void {
    for (const pending of waiting.values()) pending.reject(error);
    waiting.clear();
    worker = undefined;
  }

  function started(): Worker {
    if (worker) return worker;
    const created = new Worker(new URL('./audit-canonical-worker.ts', import.meta.url));
    created.on('message', ({ id, canonical, error }: Reply) => {
      const pending = waiting.get(id);
      waiting.delete(id);
      // Idle, the thread keeps no process alive; with chunks out, it does (they may be all the process waits on).
      if (waiting.size === 0) created.unref();
      if (canonical) pending?.resolve(canonical);
      else pending?.reject(new Error(error ?? 'the canonical args helper gave no answer'));
    });
    created.on('error', (error) => failAll(error));
    created.on('exit', () => {
      if (worker === created) failAll(new Error('the canonical args helper stopped'));
    });
    worker = created;
    return created;
  }

  return {
    chunks(rows: readonly QueuedAuditRow[]): CanonicalChunks {
      if (rows.length < HELPER_MIN_ROWS) return canonicalChunksHere(rows);
      const thread = started();
      thread.ref();
      const chunks: Array<Promise<readonly string[]>> = [];
      for (let start = 0; start < rows.length; start += COPY_CHUNK_ROWS) {
        const id = (nextId += 1);
        const promise = new Promise<string[]>((resolve, reject) => waiting.set(id, { resolve, reject }));
        promise.catch(() => undefined);
        thread.postMessage({ id, texts: rows.slice(start, start + COPY_CHUNK_ROWS).map((row) => row.argsJson) });
        chunks.push(promise);
      }
      return chunks;
    },
    async close(): Promise<void> {
      const stopping = worker;
      worker = undefined;
      await stopping?.terminate();
    },
  };
}

export type CanonicalArgsHelper = ReturnType<typeof createCanonicalArgsHelper>;
