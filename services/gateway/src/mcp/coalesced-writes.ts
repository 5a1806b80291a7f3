import type { ServerResponse } from 'node:http';

/**
 * How long an answer's first bytes (the headers and the SSE priming event) wait for the answer itself.
 * A quick tool call then leaves in one write instead of three; a slow one still shows its headers and
 * its resumable event id to the client after this long.
 */
export const COALESCE_MS = 5;

/**
 * Holds the response's writes in the socket (cork) until the response ends or `COALESCE_MS` passes.
 * Node's `end()` uncorks the socket fully, so an answer that is ready never waits for the timer.
 */
export function coalesceWrites(response: ServerResponse): void {
  const socket = response.socket;
  if (!socket) return;
  socket.cork();
  const timer = setTimeout(() => {
    if (socket.writableCorked > 0) socket.uncork();
  }, COALESCE_MS);
  const done = () => clearTimeout(timer);
  response.once('finish', done);
  response.once('close', done);
}
