import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Agent, fetch as undiciFetch } from 'undici';
import { NO_INTERNET_CODE } from './no-internet-guard.ts';

/** How a raw socket ends: connected, or the error it failed with. */
function outcome(socket: net.Socket): Promise<{ connected: true } | { error: NodeJS.ErrnoException }> {
  return new Promise((resolve) => {
    socket.once('connect', () => (socket.destroy(), resolve({ connected: true })));
    socket.once('secureConnect', () => (socket.destroy(), resolve({ connected: true })));
    socket.once('error', (error: NodeJS.ErrnoException) => resolve({ error }));
  });
}

let server: ReturnType<typeof createServer>;
let port: number;
beforeAll(async () => {
  server = createServer((_request, response) => response.end('local'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('no test reaches the internet', () => {
  it.each([
    ['net.connect to an address', () => net.connect({ host: '192.0.2.1', port: 80 }), '192.0.2.1:80'],
    ['net.connect(port, host) to a public name', () => net.connect(443, 'example.com'), 'example.com:443'],
    ['tls.connect to a public name', () => tls.connect({ host: 'example.com', port: 443, servername: 'example.com' }), 'example.com:443'],
    ['net.connect to an IPv6 address', () => net.connect({ host: '2001:db8::1', port: 80 }), '2001:db8::1:80'],
  ])('refuses %s before any lookup, naming the target', async (_how, open, target) => {
    const result = await outcome(open());
    expect(result).toMatchObject({ error: { code: NO_INTERNET_CODE } });
    expect('error' in result && result.error.message).toContain(`a test tried to reach ${target}; tests may connect only to loopback`);
  });

  it('refuses a name whose own lookup answers an address off loopback', async () => {
    const lookup = (_name: string, _options: unknown, callback: (error: null, address: string, family: number) => void) => callback(null, '192.0.2.7', 4);
    const result = await outcome(net.connect({ host: 'api.example.com', port: 443, lookup: lookup as never }));
    expect(result).toMatchObject({ error: { code: NO_INTERNET_CODE, message: expect.stringContaining('api.example.com:443 (its lookup answered 192.0.2.7)') } });
  });

  it('refuses fetch to a host off loopback, with the address in its message', async () => {
    const refused = await fetch('http://192.0.2.1/').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(TypeError);
    expect((refused as TypeError).message).toContain('a test tried to reach http://192.0.2.1');
    expect((refused as TypeError).cause).toMatchObject({ code: NO_INTERNET_CODE });
    const byName = await fetch('https://example.com/').catch((error: unknown) => error);
    expect((byName as TypeError).message).toContain('a test tried to reach https://example.com');
  });

  it('refuses undici with its own dispatcher at the socket', async () => {
    const agent = new Agent();
    try {
      const refused = await undiciFetch('http://192.0.2.1/', { dispatcher: agent }).catch((error: unknown) => error);
      expect((refused as TypeError).cause).toMatchObject({ code: NO_INTERNET_CODE });
    } finally {
      await agent.close();
    }
  });

  it('lets loopback through: 127.0.0.1, localhost, ::1 and a name its own lookup sends to 127.0.0.1', async () => {
    expect(await (await fetch(`http://127.0.0.1:${port}/`)).text()).toBe('local');
    expect(await (await fetch(`http://localhost:${port}/`)).text()).toBe('local');
    expect(await outcome(net.connect({ host: '127.0.0.1', port }))).toEqual({ connected: true });
    const toLoopback = (_name: string, options: { all?: boolean }, callback: (error: null, address: unknown, family?: number) => void) =>
      options.all ? callback(null, [{ address: '127.0.0.1', family: 4 }]) : callback(null, '127.0.0.1', 4);
    expect(await outcome(net.connect({ host: 'caldav.icloud.com', port, lookup: toLoopback as never }))).toEqual({ connected: true });
    const six = net.createServer();
    await new Promise<void>((resolve) => six.listen(0, '::1', resolve));
    try {
      expect(await outcome(net.connect({ host: '::1', port: (six.address() as AddressInfo).port }))).toEqual({ connected: true });
    } finally {
      six.close();
    }
  });

  it('lets a unix socket through', async () => {
    const socketPath = `/tmp/pcg-no-internet-${process.pid}.sock`;
    const local = net.createServer((socket) => socket.end());
    await new Promise<void>((resolve) => local.listen(socketPath, resolve));
    try {
      expect(await outcome(net.connect(socketPath))).toEqual({ connected: true });
    } finally {
      await new Promise<void>((resolve) => local.close(() => resolve()));
    }
  });

  it('hands the guard to node processes the tests start, through NODE_OPTIONS', async () => {
    const child = spawn(process.execPath, ['-e', "require('node:net').connect({ host: '192.0.2.1', port: 80 }).on('error', (error) => { console.log(error.code); process.exit(0); })"], {
      env: { PATH: process.env.PATH ?? '', NODE_OPTIONS: process.env.NODE_OPTIONS ?? '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    await new Promise((resolve) => child.once('exit', resolve));
    expect(output).toContain(NO_INTERNET_CODE);
    expect(output).toContain('[no-internet] no-internet guard: a test tried to reach 192.0.2.1:80');
  });
});
