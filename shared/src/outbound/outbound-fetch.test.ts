import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AddressRefusedError } from './address-refused-error.ts';
import { createOutbound } from './outbound.ts';

// Issue 32: the address checked is the address dialled (no second lookup a rebinding name could answer
// otherwise), and every redirect hop opens its connection through the same check.
type Seen = { path: string; headers: IncomingHttpHeaders };
let seen: Seen[] = [];
let base = '';
let port = 0;
const server = createServer((request, response) => {
  seen.push({ path: request.url ?? '', headers: request.headers });
  const redirect = /^\/to\/(.*)$/.exec(request.url ?? '');
  if (redirect) {
    response.writeHead(302, { location: decodeURIComponent(redirect[1] ?? '') });
    response.end();
    return;
  }
  response.end(`answered ${request.url}`);
});

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function outbound(answers: (hostname: string, call: number) => string | string[]) {
  const lookups: string[] = [];
  const made = createOutbound({
    ownPorts: [{ port: 8787, name: 'Console port (REST_PORT)' }],
    localAddresses: () => [],
    lookup: async (hostname) => {
      lookups.push(hostname);
      const answer = answers(hostname, lookups.length);
      return (Array.isArray(answer) ? answer : [answer]).map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    },
  });
  return { ...made, lookups };
}

describe('the outbound fetch dials only addresses the policy checked (issue 32)', () => {
  it('reaches a loopback source, and a name resolved to loopback at the address the lookup gave, with the name as Host', async () => {
    seen = [];
    const { fetch, close, lookups } = outbound(() => '127.0.0.1');
    const direct = await fetch(`${base}/api/`);
    expect(await direct.text()).toBe('answered /api/');
    const named = await fetch(`http://hub.test:${port}/api/states`);
    expect(await named.text()).toBe('answered /api/states');
    expect(lookups).toEqual(['hub.test']);
    expect(seen.map((request) => request.headers.host)).toEqual([`127.0.0.1:${port}`, `hub.test:${port}`]);
    await close();
  });

  it('tries each checked address of a name, as Node\'s family selection does: ::1 refuses the connection, 127.0.0.1 answers', async () => {
    const { fetch, close, lookups } = outbound(() => ['::1', '127.0.0.1']);
    const answered = await fetch(`http://dual.test:${port}/both`);
    expect(await answered.text()).toBe('answered /both');
    expect(lookups).toEqual(['dual.test']);
    await close();
  });

  it('refuses an IP literal in a refused range with AddressRefusedError, before anything is sent', async () => {
    const { fetch, close } = outbound(() => '127.0.0.1');
    for (const url of ['http://169.254.169.254/latest/meta-data/', 'http://2852039166/', 'http://[::ffff:a9fe:a9fe]/', 'http://[fd00:ec2::254]/']) {
      await expect(fetch(url)).rejects.toBeInstanceOf(AddressRefusedError);
    }
    await expect(fetch('data:text/plain,hello')).rejects.toThrow('the address data: was refused: data is not http or https');
    await close();
  });

  it('dials the address it checked: a name that answers loopback once and a metadata address after is looked up once, and loopback is dialled', async () => {
    seen = [];
    // A dialler that looked the name up again (as net.connect does with a bare name) would get the second answer.
    const { fetch, close, lookups } = outbound((_name, call) => (call % 2 === 1 ? '127.0.0.1' : '169.254.169.254'));
    const first = await fetch(`http://rebind.test:${port}/one`);
    expect(await first.text()).toBe('answered /one');
    expect(lookups).toEqual(['rebind.test']);
    expect(seen.map((request) => request.path)).toEqual(['/one']);
    await close();
    // A new connection looks the name up again, and the new answer is checked before it is dialled.
    const fresh = outbound((_name, call) => (call % 2 === 1 ? '169.254.169.254' : '127.0.0.1'));
    await expect(fresh.fetch(`http://rebind.test:${port}/two`)).rejects.toThrow(/rebind\.test resolves to 169\.254\.169\.254/);
    expect(fresh.lookups).toEqual(['rebind.test']);
    expect(seen.map((request) => request.path)).toEqual(['/one']);
    await fresh.close();
  });

  it('checks every redirect hop it follows: a hop to a metadata address, to a name that resolves to one, or to the gateway\'s own port is refused', async () => {
    const { fetch, close } = outbound((name) => (name === 'evil.test' ? '169.254.169.254' : '127.0.0.1'));
    for (const target of ['http://169.254.169.254/latest/meta-data/', 'http://evil.test/', 'http://127.0.0.1:8787/api/connections']) {
      seen = [];
      await expect(fetch(`${base}/to/${encodeURIComponent(target)}`)).rejects.toBeInstanceOf(AddressRefusedError);
      expect(seen.map((request) => request.path)).toEqual([`/to/${encodeURIComponent(target)}`]);
    }
    const allowed = await fetch(`${base}/to/${encodeURIComponent(`http://hub.test:${port}/landed`)}`);
    expect(await allowed.text()).toBe('answered /landed');
    await close();
  });

  it('hands a hop to the caller under redirect: manual, and the next request through it is checked', async () => {
    const { fetch, close } = outbound(() => '127.0.0.1');
    const hop = await fetch(`${base}/to/${encodeURIComponent('http://[::ffff:169.254.169.254]/')}`, { redirect: 'manual' });
    expect(hop.status).toBe(302);
    await expect(fetch(new URL(hop.headers.get('location') ?? '', base))).rejects.toThrow(/written as IPv6/);
    await close();
  });
});
