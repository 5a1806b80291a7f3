/**
 * Loaded with `--expose-gc --import` into a benchmarked server (the gateway or the bare SDK server), never
 * into the product: answers a `heap` message on the IPC channel with the heap used after a forced
 * collection and the resident set size, in bytes.
 */
const collect = (globalThis as { gc?: () => void }).gc;
process.on('message', (message) => {
  if (message !== 'heap' || !process.send) return;
  collect?.();
  collect?.();
  const usage = process.memoryUsage();
  process.send({ heapUsed: usage.heapUsed, heapTotal: usage.heapTotal, external: usage.external, rss: usage.rss, collected: collect !== undefined });
});
// The IPC channel must not keep a server alive that is otherwise done.
process.channel?.unref();
