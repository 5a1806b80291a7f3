/**
 * Loaded with `--expose-gc --import` into a benchmarked server (the gateway or the bare SDK server), never
 * into the product: answers a `heap` message on the IPC channel with the heap used after a forced
 * collection and the resident set size, in bytes; `heap-reduced` the same after a memory-reducing
 * collection (V8's last-resort full collection, which also gives back the pages its heap holds free).
 */
type Collect = (options?: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;
const collect = (globalThis as { gc?: Collect }).gc;
process.on('message', (message) => {
  if ((message !== 'heap' && message !== 'heap-reduced') || !process.send) return;
  if (message === 'heap-reduced') collect?.({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  collect?.();
  collect?.();
  const usage = process.memoryUsage();
  process.send({ heapUsed: usage.heapUsed, heapTotal: usage.heapTotal, external: usage.external, rss: usage.rss, collected: collect !== undefined });
});
// The IPC channel must not keep a server alive that is otherwise done.
process.channel?.unref();
