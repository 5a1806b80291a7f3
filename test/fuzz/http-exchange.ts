import http from 'node:http';

export type FuzzRequest = {
  port: 'console' | 'agent';
  method: string;
  path: string;
  headers: Record<string, string>;
  /** Sent as written: a string is the raw body, anything else is serialised as JSON. */
  body?: unknown;
};

export type FuzzAnswer = { status: number; headers: http.IncomingHttpHeaders; body: string };

/**
 * One request over plain `node:http`, which, unlike `fetch`, sends any Host header and any body with any
 * method. Answers are read whole; a stream that does not end within `timeoutMs` is an error.
 */
export async function exchange(portNumber: number, request: FuzzRequest, timeoutMs = 10_000): Promise<FuzzAnswer> {
  const body = request.body === undefined ? undefined : typeof request.body === 'string' ? request.body : JSON.stringify(request.body);
  return new Promise((resolve, reject) => {
    const outgoing = http.request(
      {
        host: '127.0.0.1',
        port: portNumber,
        method: request.method,
        path: request.path,
        headers: { ...(body === undefined ? {} : { 'content-length': String(Buffer.byteLength(body)) }), ...request.headers },
        setHost: !Object.keys(request.headers).some((name) => name.toLowerCase() === 'host'),
        agent: false,
      },
      (incoming) => {
        const chunks: Buffer[] = [];
        incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
        incoming.on('end', () => resolve({ status: incoming.statusCode ?? 0, headers: incoming.headers, body: Buffer.concat(chunks).toString('utf8') }));
        incoming.on('error', reject);
      },
    );
    outgoing.setTimeout(timeoutMs, () => outgoing.destroy(new Error(`no whole answer within ${timeoutMs} ms`)));
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

/** What a JSON-RPC answer holds, whether it came as JSON or as one SSE event. */
export function jsonRpcOf(answer: FuzzAnswer): unknown {
  // A priming event (an id and an empty data line, for resumption) holds no message.
  const data = answer.body.split('\n').find((line) => line.startsWith('data: ') && line.length > 6);
  try {
    return JSON.parse(data ? data.slice(6) : answer.body);
  } catch {
    return undefined;
  }
}
