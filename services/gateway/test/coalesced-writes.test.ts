import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { COALESCE_MS, coalesceWrites } from '../src/mcp/coalesced-writes.ts';

/** Counts the writes a response's socket hands to the kernel (one per `_write`, one per `_writev`). */
function countWrites(socket: Socket): () => number {
  let writes = 0;
  const target = socket as unknown as { _write: (...args: unknown[]) => void; _writev: (...args: unknown[]) => void };
  const write = target._write.bind(socket);
  const writev = target._writev.bind(socket);
  target._write = (...args) => ((writes += 1), write(...args));
  target._writev = (...args) => ((writes += 1), writev(...args));
  return () => writes;
}

let server: Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

/** A server that answers like the SDK's SSE answer: headers, a priming event, then the answer after `delayMs`. */
async function sseServer(delayMs: number, coalesce: boolean, writes: Array<() => number>) {
  server = createServer((_request: IncomingMessage, response: ServerResponse) => {
    if (response.socket) writes.push(countWrites(response.socket));
    if (coalesce) coalesceWrites(response);
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    response.flushHeaders();
    response.write('id: 1\nretry: 1000\ndata: \n\n');
    setTimeout(() => response.end('event: message\nid: 2\ndata: {"result":{}}\n\n'), delayMs);
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** Reads one answer; `headersAt` and `doneAt` are milliseconds after the request was sent. */
function fetchTimed(port: number): Promise<{ body: string; headersAt: number; doneAt: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = httpRequest({ port, host: '127.0.0.1', method: 'POST', path: '/mcp' }, (response) => {
      const headersAt = performance.now() - started;
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ body, headersAt, doneAt: performance.now() - started }));
    });
    req.on('error', reject);
    req.end('{}');
  });
}

describe('a quick answer leaves in one write (bench:mcp, issue 21)', () => {
  it('sends headers, the priming event and the answer in one write when the answer is ready at once', async () => {
    const writes: Array<() => number> = [];
    const port = await sseServer(0, true, writes);
    const { body } = await fetchTimed(port);
    expect(body).toContain('data: {"result":{}}');
    expect(writes[0]?.()).toBe(1);
  });

  it('without it the same answer takes several writes (the measure above can fail)', async () => {
    const writes: Array<() => number> = [];
    const port = await sseServer(0, false, writes);
    await fetchTimed(port);
    expect(writes[0]?.()).toBeGreaterThan(1);
  });

  it('does not hold back a slow answer: its headers and priming event go out after the coalescing window', async () => {
    const writes: Array<() => number> = [];
    const port = await sseServer(400, true, writes);
    const { body, headersAt, doneAt } = await fetchTimed(port);
    expect(body).toContain('retry: 1000');
    expect(doneAt).toBeGreaterThanOrEqual(390);
    // Generous against a loaded machine: the point is "well before the answer", not a timing.
    expect(COALESCE_MS).toBeLessThan(50);
    expect(headersAt).toBeLessThan(300);
  });
});
