import { Worker } from 'node:worker_threads';
import { READ_CHUNK_ENTRIES, readQueueChunk, type ReadChunk } from './audit-queue-read.ts';

/** Below this a batch is read on the writer's own thread: the messages would cost more than they save. */
const HELPER_MIN_ENTRIES = 2 * READ_CHUNK_ENTRIES;

type Reply = { id: number; chunk?: ReadChunk; error?: string };

/** Every chunk of a batch read on this thread (small batches, tests, and when the helper thread fails). */
export function readQueueBatchHere(entries: readonly string[]): ReadChunk[] {
  const chunks: ReadChunk[] = [];
  for (let start = 0; start < entries.length; start += READ_CHUNK_ENTRIES) chunks.push(readQueueChunk(entries.slice(start, start + READ_CHUNK_ENTRIES)));
  return chunks;
}

/**
 * Reads the audit-writer's batches (issue 44): parsing and checking each queue entry, putting its args in
 * canonical form and encoding its COPY fields is most of a flush's work and needs no chain head, so a
 * large batch is read on a helper thread, a chunk a message, while the writer's own thread writes the
 * batch before it. The thread is started on the first large batch and keeps the process alive only while
 * chunks are out. If the thread fails, the batch is read here instead: reading never loses a batch.
 */
export function createQueueReader() {
  let worker: Worker | undefined;
  let nextId = 0;
  const waiting = new Map<number, { resolve: (chunk: ReadChunk) => void; reject: (error: Error) => void }>();

  function failAll(error: Error): void {
    for (const pending of waiting.values()) pending.reject(error);
    waiting.clear();
    worker = undefined;
  }

  function started(): Worker {
    if (worker) return worker;
    const created = new Worker(new URL('./audit-queue-read-worker.ts', import.meta.url));
    created.on('message', ({ id, chunk, error }: Reply) => {
      const pending = waiting.get(id);
      waiting.delete(id);
      // Idle, the thread keeps no process alive; with chunks out, it does (they may be all the process waits on).
      if (waiting.size === 0) created.unref();
      if (chunk) pending?.resolve(chunk);
      else pending?.reject(new Error(error ?? 'the queue reader thread gave no answer'));
    });
    created.on('error', (error) => failAll(error));
    created.on('exit', () => {
      if (worker === created) failAll(new Error('the queue reader thread stopped'));
    });
    worker = created;
    return created;
  }

  function readThere(entries: readonly string[]): Promise<ReadChunk[]> {
    const thread = started();
    thread.ref();
    const chunks: Array<Promise<ReadChunk>> = [];
    for (let start = 0; start < entries.length; start += READ_CHUNK_ENTRIES) {
      const id = (nextId += 1);
      chunks.push(new Promise<ReadChunk>((resolve, reject) => waiting.set(id, { resolve, reject })));
      thread.postMessage({ id, entries: entries.slice(start, start + READ_CHUNK_ENTRIES) });
    }
    return Promise.all(chunks);
  }

  return {
    /** The batch's chunks in queue order. Never rejects. */
    async read(entries: readonly string[]): Promise<ReadChunk[]> {
      if (entries.length < HELPER_MIN_ENTRIES) return readQueueBatchHere(entries);
      try {
        return await readThere(entries);
      } catch {
        return readQueueBatchHere(entries);
      }
    },
    /** Stops the helper thread; a batch it was reading is read on this thread instead. */
    async close(): Promise<void> {
      const stopping = worker;
      worker = undefined;
      await stopping?.terminate();
      failAll(new Error('the queue reader was closed'));
    },
  };
}

export type QueueReader = ReturnType<typeof createQueueReader>;
