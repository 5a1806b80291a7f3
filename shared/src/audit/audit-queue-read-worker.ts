import { parentPort } from 'node:worker_threads';
import { readChunkTransfers, readQueueChunk } from './audit-queue-read.ts';

/**
 * The audit-writer's helper thread (`createQueueReader`): each message is a chunk of queue entries,
 * answered with `readQueueChunk` of them; its arrays' memory is moved, not copied, back.
 */
type Request = { id: number; entries: string[] };

parentPort?.on('message', ({ id, entries }: Request) => {
  try {
    const chunk = readQueueChunk(entries);
    parentPort?.postMessage({ id, chunk }, readChunkTransfers(chunk));
  } catch (error) {
    parentPort?.postMessage({ id, error: error instanceof Error ? error.message : String(error) });
  }
});
