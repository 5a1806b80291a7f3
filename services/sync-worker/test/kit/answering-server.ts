import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type SeenRequest = { method: string; path: string; headers: IncomingMessage['headers']; body: string };
export type Answer = { status: number; headers?: Record<string, string>; body?: string } | 'hang';

/** A local HTTP server whose answer per path a test sets; it records every request it got. */
export async function startAnsweringServer(answers: Record<string, Answer | ((seen: SeenRequest) => Answer)>) {
  const seen: SeenRequest[] = [];
  const hung: ServerResponse[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const record = { method: request.method ?? '', path: request.url ?? '', headers: request.headers, body: Buffer.concat(chunks).toString('utf8') };
      seen.push(record);
      const entry = answers[new URL(record.path, 'http://x').pathname];
      const answer = typeof entry === 'function' ? entry(record) : (entry ?? { status: 404, body: 'no such path' });
      if (answer === 'hang') {
        hung.push(response);
        return;
      }
      response.writeHead(answer.status, answer.headers);
      response.end(answer.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    base,
    seen,
    answers,
    async close() {
      for (const response of hung) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
