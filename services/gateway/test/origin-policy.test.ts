import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestAgent, useTestEnvironment } from '@pcg/testkit/testing';
import { BRIDGE_PATHS } from '../src/bridge/bridge-endpoints.ts';
import { CORS_ALLOWED_HEADERS, CORS_EXPOSED_HEADERS } from '../src/edge/origin-policy.ts';
import type { RunningGateway } from '../src/service.ts';
import { savePublicOrigin, waitForBridge } from './bridge-helpers.ts';
import { INITIALIZE, MCP_HEADERS, rpcError, startTestGateway } from './gateway-harness.ts';

const testEnv = useTestEnvironment();
const PUBLIC_ORIGIN = 'https://pcg.example.com';
const LISTED_ORIGIN = 'https://chatgpt.com';
let gateway: RunningGateway;
let key: string;

beforeAll(async () => {
  gateway = await startTestGateway(testEnv, { MCP_ALLOWED_ORIGINS: `${LISTED_ORIGIN}, https://claude.ai/`, MCP_ALLOWED_HOSTS: 'gw.lan' });
  key = await createTestAgent(testEnv.db, { name: 'origin-agent', sectors: ['finance'] });
});
afterAll(async () => gateway.close());

type Answer = { status: number; headers: Record<string, string | string[] | undefined>; body: string };

/** One HTTP exchange with any Host and Origin (fetch does not let a caller choose Host). */
function send(method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<Answer> {
  const { port } = new URL(gateway.address);
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest({ host: '127.0.0.1', port, method, path, headers }, (incoming) => {
      let text = '';
      incoming.setEncoding('utf8');
      incoming.on('data', (chunk: string) => (text += chunk));
      incoming.on('end', () => resolve({ status: incoming.statusCode ?? 0, headers: incoming.headers, body: text }));
    });
    outgoing.on('error', reject);
    outgoing.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

const initialize = (headers: Record<string, string>) => send('POST', '/mcp', { ...MCP_HEADERS, authorization: `Bearer ${key}`, ...headers }, INITIALIZE);
const closeSession = async (answer: Answer) => {
  const id = answer.headers['mcp-session-id'];
  if (typeof id === 'string') await send('DELETE', '/mcp', { 'mcp-session-id': id, authorization: `Bearer ${key}` });
};
const notFound = JSON.stringify(rpcError(-32601, 'Not found'));

describe('the agent port checks Origin and Host on /mcp (design 7.3; MCP transport: 403 for an invalid Origin)', () => {
  it('refuses an initialize with Host evil.example.com and a valid key: 403, a JSON-RPC body, no session', async () => {
    const answer = await initialize({ host: 'evil.example.com' });
    expect(answer.status).toBe(403);
    expect(answer.headers['mcp-session-id']).toBeUndefined();
    expect(JSON.parse(answer.body)).toEqual(rpcError(-32000, 'Forbidden host'));
  });

  it('refuses a POST /mcp with no Host header at all (HTTP/1.1, raw socket): 403 with the JSON-RPC body, not a bare 400 (issue 38)', async () => {
    const body = JSON.stringify(INITIALIZE);
    const { port } = new URL(gateway.address);
    // Node's client always writes a Host; only a raw socket can leave it out.
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () => {
        socket.end(
          [
            'POST /mcp HTTP/1.1',
            'Content-Type: application/json',
            'Accept: application/json, text/event-stream',
            `Authorization: Bearer ${key}`,
            `Content-Length: ${Buffer.byteLength(body)}`,
            'Connection: close',
            '',
            body,
          ].join('\r\n'),
        );
      });
      let text = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (text += chunk));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    const [head = '', payload = ''] = raw.split('\r\n\r\n');
    expect(head.split('\r\n')[0]).toBe('HTTP/1.1 403 Forbidden');
    expect(head.toLowerCase()).not.toContain('mcp-session-id');
    expect(JSON.parse(payload)).toEqual(rpcError(-32000, 'Forbidden host'));
  });

  it('refuses an initialize with Origin http://evil.example.com and a valid key: 403, a JSON-RPC body, no CORS headers', async () => {
    for (const origin of ['http://evil.example.com', 'null', 'http://localhost.evil.example.com', `${LISTED_ORIGIN}/path`, 'https://chatgpt.com:444']) {
      const answer = await initialize({ origin });
      expect(answer.status, origin).toBe(403);
      expect(JSON.parse(answer.body)).toEqual(rpcError(-32000, 'Forbidden origin'));
      expect(answer.headers['access-control-allow-origin']).toBeUndefined();
      expect(answer.headers['mcp-session-id']).toBeUndefined();
    }
  });

  it('serves loopback origins and hosts, listed origins and hosts, and clients that send no Origin', async () => {
    for (const headers of [{}, { origin: 'http://localhost:5173' }, { origin: 'http://127.0.0.1' }, { origin: 'http://[::1]:8080' }, { origin: LISTED_ORIGIN }, { origin: 'https://claude.ai' }, { host: 'gw.lan:8788' }, { host: 'localhost' }, { host: '[::1]:9' }] as Array<Record<string, string>>) {
      const answer = await initialize(headers);
      expect(answer.status, JSON.stringify(headers)).toBe(200);
      expect(answer.headers['mcp-session-id']).toBeTypeOf('string');
      await closeSession(answer);
    }
  });

  it('gives an allowed origin CORS headers on /mcp answers, the session id exposed; none without an Origin', async () => {
    const answer = await initialize({ origin: LISTED_ORIGIN });
    expect(answer.headers['access-control-allow-origin']).toBe(LISTED_ORIGIN);
    expect(String(answer.headers['access-control-expose-headers']).split(', ')).toEqual([...CORS_EXPOSED_HEADERS]);
    expect(answer.headers.vary).toContain('Origin');
    await closeSession(answer);
    const plain = await initialize({});
    expect(plain.headers['access-control-allow-origin']).toBeUndefined();
    await closeSession(plain);
  });

  it('answers a preflight for /mcp from an origin in MCP_ALLOWED_ORIGINS with 204 and the allowed headers', async () => {
    const answer = await send('OPTIONS', '/mcp', { origin: LISTED_ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, mcp-session-id' });
    expect(answer.status).toBe(204);
    expect(answer.headers['access-control-allow-origin']).toBe(LISTED_ORIGIN);
    expect(String(answer.headers['access-control-allow-methods']).split(', ')).toEqual(['GET', 'POST', 'DELETE']);
    expect(String(answer.headers['access-control-allow-headers']).split(', ')).toEqual([...CORS_ALLOWED_HEADERS]);
    expect(String(answer.headers['access-control-expose-headers']).split(', ')).toEqual([...CORS_EXPOSED_HEADERS]);
  });

  it('answers nothing CORS to another origin: a preflight from it is 403, and OPTIONS without an Origin keeps 404 -32601', async () => {
    const refused = await send('OPTIONS', '/mcp', { origin: 'https://evil.example.com', 'access-control-request-method': 'POST' });
    expect(refused.status).toBe(403);
    expect(refused.headers['access-control-allow-origin']).toBeUndefined();
    const plain = await send('OPTIONS', '/mcp', {});
    expect(plain.status).toBe(404);
    expect(plain.body).toBe(notFound);
  });

  it('leaves every other path at 404 -32601, OPTIONS included, whatever its Host or Origin; so are the bridge addresses while the bridge is off', async () => {
    for (const [method, path] of [['OPTIONS', '/nothing'], ['GET', '/nothing'], ['OPTIONS', BRIDGE_PATHS.token], ['OPTIONS', BRIDGE_PATHS.protectedResourceMcp], ['GET', BRIDGE_PATHS.authorizationServer], ['POST', BRIDGE_PATHS.register]] as const) {
      for (const headers of [{ origin: LISTED_ORIGIN }, { origin: 'https://evil.example.com' }, { host: 'evil.example.com' }] as Array<Record<string, string>>) {
        const answer = await send(method, path, { ...headers, 'access-control-request-method': 'POST' });
        expect(answer.status, `${method} ${path} ${JSON.stringify(headers)}`).toBe(404);
        expect(answer.body).toBe(notFound);
        expect(answer.headers['access-control-allow-origin']).toBeUndefined();
      }
    }
  });
});

describe('with the bridge on (a public origin saved)', () => {
  beforeAll(async () => {
    await savePublicOrigin(testEnv, PUBLIC_ORIGIN);
    await waitForBridge(gateway.address, true);
  });
  afterAll(async () => {
    await savePublicOrigin(testEnv, null);
    await waitForBridge(gateway.address, false);
  });

  it('accepts the public origin and its host (a reverse proxy that preserves Host), and still refuses others', async () => {
    const proxied = await initialize({ host: 'pcg.example.com', origin: PUBLIC_ORIGIN });
    expect(proxied.status).toBe(200);
    expect(proxied.headers['access-control-allow-origin']).toBe(PUBLIC_ORIGIN);
    await closeSession(proxied);
    expect((await initialize({ host: 'pcg.example.com.evil.net' })).status).toBe(403);
    expect((await send('GET', BRIDGE_PATHS.authorizationServer, { host: 'evil.example.com' })).status).toBe(403);
    expect((await send('POST', BRIDGE_PATHS.token, { origin: 'https://evil.example.com', 'content-type': 'application/x-www-form-urlencoded' })).status).toBe(403);
  });

  it.each([BRIDGE_PATHS.protectedResource, BRIDGE_PATHS.protectedResourceMcp, BRIDGE_PATHS.authorizationServer, BRIDGE_PATHS.register, BRIDGE_PATHS.token])(
    'answers a preflight for %s from an origin in MCP_ALLOWED_ORIGINS, and nothing to another origin',
    async (path) => {
      const preflight = await send('OPTIONS', path, { origin: LISTED_ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' });
      expect(preflight.status).toBe(204);
      expect(preflight.headers['access-control-allow-origin']).toBe(LISTED_ORIGIN);
      expect(String(preflight.headers['access-control-allow-headers'])).toContain('Content-Type');
      const other = await send('OPTIONS', path, { origin: 'https://evil.example.com', 'access-control-request-method': 'POST' });
      expect(other.status).toBe(403);
      expect(other.headers['access-control-allow-origin']).toBeUndefined();
    },
  );

  it('lets a listed origin read the metadata documents, and the challenge of a 401 on /mcp', async () => {
    const document = await send('GET', BRIDGE_PATHS.protectedResourceMcp, { origin: LISTED_ORIGIN });
    expect(document.status).toBe(200);
    expect(document.headers['access-control-allow-origin']).toBe(LISTED_ORIGIN);
    const refused = await send('POST', '/mcp', { ...MCP_HEADERS, origin: LISTED_ORIGIN }, INITIALIZE);
    expect(refused.status).toBe(401);
    expect(refused.headers['www-authenticate']).toContain('resource_metadata=');
    expect(String(refused.headers['access-control-expose-headers'])).toContain('WWW-Authenticate');
  });
});
