import { parentPort } from 'node:worker_threads';
import { canonicalJson } from './audit-chain-fns.ts';

/**
 * The audit-writer's helper thread (`createCanonicalArgsHelper`): each message is a chunk of rows' `argsJson`
 * texts, answered with their canonical forms in the same order, or with why one is not JSON.
 */
type Request = { id: number; texts: string[] };

parentPort?.on('message', ({ id, texts }: Request) => {
  try {
    parentPort?.postMessage({ id, canonical: texts.map((text) => canonicalJson(JSON.parse(text) as unknown)) });
  } catch (error) {
    parentPort?.postMessage({ id, error: error instanceof Error ? error.message : String(error) });
  }
});
