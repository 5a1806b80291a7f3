import { parentPort } from 'node:worker_threads';
import { readQueueChunk } from './audit-queue-read.ts';

/**
 * The audit-writer's helper thread (`createQueueReader`): each message is a chunk of queue entries,
 * answered with `readQueueChunk` of them; the encoded fields' memory is moved, not copied, back.
 */
type Request = { id: number; entries: string[] };

parentPort?.on('message', ({ id, entries }: Request) => {
  try {
    const chunk = readQueueChunk(entries);
    parentPort?.postMessage({ id, chunk }, [chunk.fields.bytes.buffer, chunk.fields.ends.buffer]);
  } catch (error) {
    parentPort?.postMessage({ id, error: error instanceof Error ? error.message : String(error) });
  }
});
