import { describe, expect, it } from 'vitest';
import { hostHeaderValues, hostIsAllowed, isHostCheckExempt, parseHost, requestHostIsAllowed } from '../src/host-check/host-fns.ts';

const EXTRA = ['gateway.lan', 'Console.Example:8443', '[fd00::7]'];

describe('Host values (spec 5)', () => {
  it.each([
    'localhost',
    'localhost:8787',
    'LOCALHOST',
    'LocalHost:80',
    '127.0.0.1',
    '127.0.0.1:8787',
    '[::1]',
    '[::1]:8787',
    '::1',
    'gateway.lan',
    'GATEWAY.LAN:8787',
    'console.example:8443',
    '[FD00::7]:1',
  ])('accepts %j', (host) => {
    expect(hostIsAllowed(host, EXTRA)).toBe(true);
  });

  it.each([
    ['no Host', undefined],
    ['an empty Host', ''],
    ['another name', 'evil.com'],
    ['a name that starts like localhost', 'localhost.evil.com'],
    ['a name that ends like localhost', 'evillocalhost'],
    ['a subdomain of an allowed name', 'x.gateway.lan'],
    ['an allowed name on a port its entry does not name', 'console.example:8787'],
    ['another loopback spelling', '127.0.0.2'],
    ['a long IPv6 loopback', '[0:0:0:0:0:0:0:1]'],
    ['unbracketed ::1 with a port', '::1:8787'],
    ['userinfo', 'user@localhost'],
    ['a path', 'localhost/x'],
    ['an empty port', 'localhost:'],
    ['a non-numeric port', 'localhost:http'],
    ['a trailing dot', 'localhost.'],
    ['two names', 'localhost, evil.com'],
    ['a wildcard', '*'],
  ])('refuses %s', (_label, host) => {
    expect(hostIsAllowed(host, EXTRA)).toBe(false);
  });

  it('accepts only the loopback names when REST_ALLOWED_HOSTS is empty', () => {
    expect(hostIsAllowed('gateway.lan', [])).toBe(false);
    expect(hostIsAllowed('localhost', [])).toBe(true);
  });

  it('splits names and ports', () => {
    expect(parseHost('[::1]:8787')).toEqual({ name: '::1', port: '8787' });
    expect(parseHost('LocalHost')).toEqual({ name: 'localhost', port: undefined });
    expect(parseHost('bad host')).toBeNull();
  });
});

describe('the request target', () => {
  it.each([
    ['an origin-form target', ['localhost:8787'], '/api/agents'],
    ['an absolute-form target naming the same host', ['localhost:8787'], 'http://localhost:8787/api/agents'],
    ['an absolute-form target differing only in case and port', ['LOCALHOST'], 'http://localhost:8787/api/agents'],
    ['an absolute-form https target', ['[::1]:8787'], 'https://[::1]:8787/api/agents'],
  ])('accepts %s', (_label, hostHeaders, target) => {
    expect(requestHostIsAllowed({ hostHeaders, target }, EXTRA)).toBe(true);
  });

  it.each([
    ['no Host header', [], '/api/agents'],
    ['two Host headers', ['localhost', 'localhost'], '/api/agents'],
    ['a disallowed Host', ['localhost.evil.com'], '/api/agents'],
    ['an absolute-form authority that differs from Host', ['localhost'], 'http://evil.com/api/agents'],
    ['an absolute-form authority that is allowed but differs from Host', ['localhost'], 'http://127.0.0.1/api/agents'],
    ['an absolute-form authority with a disallowed Host', ['evil.com'], 'http://localhost/api/agents'],
    ['an absolute-form authority with userinfo', ['localhost'], 'http://user@localhost/api/agents'],
    ['an absolute-form target of another scheme', ['localhost'], 'ftp://localhost/api/agents'],
    ['an asterisk target', ['localhost'], '*'],
    ['an authority-form target', ['localhost'], 'localhost:8787'],
  ])('refuses %s', (_label, hostHeaders, target) => {
    expect(requestHostIsAllowed({ hostHeaders, target }, EXTRA)).toBe(false);
  });

  it('reads every Host header from the raw list, whatever its case', () => {
    expect(hostHeaderValues(['Host', 'a', 'Accept', '*/*', 'HOST', 'b'])).toEqual(['a', 'b']);
  });
});

describe('exempt routes (spec 5)', () => {
  it.each(['/healthz', '/api/context', '/api/schema', '/api/query', '/api/fetch_live', '/api/records/:sector/:id', '/api/ingest/:connectionId'])(
    'skips %s',
    (route) => {
      expect(isHostCheckExempt(route)).toBe(true);
    },
  );

  it.each([undefined, '/api/agents', '/api/agents/:name', '/api/audit', '/api/data/:sector', '/api/operator/context', '/api/ingest', '/healthz/x'])(
    'checks %s',
    (route) => {
      expect(isHostCheckExempt(route)).toBe(false);
    },
  );
});
