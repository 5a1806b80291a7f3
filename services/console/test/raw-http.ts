import net from 'node:net';

export type RawResponse = { status: number; body: string };

/**
 * Sends one request exactly as written over a plain socket, for what `fetch` and `inject` cannot send:
 * absolute-form targets, a missing or doubled Host header. The socket is not half-closed (Node drops
 * the answer to a request whose client ended its side); `Connection: close` ends it from the server.
 */
export async function rawRequest(address: string, lines: string[]): Promise<RawResponse> {
  const { hostname, port } = new URL(address);
  const text = await new Promise<string>((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => socket.write(`${lines.join('\r\n')}\r\n\r\n`));
    let received = '';
    socket.setEncoding('utf8');
    socket.setTimeout(5_000, () => socket.destroy(new Error('no answer within 5 s')));
    socket.on('data', (chunk: string) => (received += chunk));
    socket.on('end', () => resolve(received));
    socket.on('error', reject);
  });
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1];
  if (!status) throw new Error(`not an HTTP answer: ${text.slice(0, 80)}`);
  return { status: Number(status), body: text.slice(text.indexOf('\r\n\r\n') + 4) };
}
