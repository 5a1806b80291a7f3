import { describe, expect, it } from 'vitest';
import { mcpResourceOf, parsePublicOrigin, PUBLIC_ORIGIN_RULES } from './public-origin.ts';
import { parseSettingsEvent } from './settings-events.ts';

const { originOnly, httpsRequired, notAnOrigin, parts } = PUBLIC_ORIGIN_RULES;

describe('parsePublicOrigin accepts an origin and stores it normalised (spec 5 rule 8)', () => {
  it.each([
    ['https://pcg.example.com', 'https://pcg.example.com'],
    ['https://pcg.example.com/', 'https://pcg.example.com'],
    ['https://pcg.example.com:443', 'https://pcg.example.com'],
    ['https://pcg.example.com:443/', 'https://pcg.example.com'],
    ['https://pcg.example.com:8443', 'https://pcg.example.com:8443'],
    ['https://PCG.Example.COM', 'https://pcg.example.com'],
    ['HTTPS://PCG.EXAMPLE.COM/', 'https://pcg.example.com'],
    ['https://bücher.example', 'https://xn--bcher-kva.example'],
    ['https://203.0.113.7', 'https://203.0.113.7'],
    ['http://localhost:8788', 'http://localhost:8788'],
    ['http://LOCALHOST', 'http://localhost'],
    ['http://127.0.0.1:80', 'http://127.0.0.1'],
    ['http://127.0.0.1:8788/', 'http://127.0.0.1:8788'],
    ['http://127.1.2.3', 'http://127.1.2.3'],
    ['http://[::1]:8080', 'http://[::1]:8080'],
    ['http://[::1]:80', 'http://[::1]'],
  ])('%s → %s', (input, origin) => {
    expect(parsePublicOrigin(input)).toEqual({ ok: true, origin });
  });
});

describe('parsePublicOrigin refuses anything but the origin, naming the origin to save', () => {
  it.each([
    ['a path', 'https://pcg.example.com/mcp', [parts.path('/mcp')], 'https://pcg.example.com'],
    ['a path ending in a slash', 'https://pcg.example.com:8443/mcp/', [parts.path('/mcp/')], 'https://pcg.example.com:8443'],
    ['a query', 'https://pcg.example.com/?a=1', [parts.query('a=1')], 'https://pcg.example.com'],
    ['an empty query', 'https://pcg.example.com?', [parts.query('')], 'https://pcg.example.com'],
    ['a fragment', 'https://pcg.example.com#top', [parts.fragment('top')], 'https://pcg.example.com'],
    ['an empty fragment', 'https://pcg.example.com/#', [parts.fragment('')], 'https://pcg.example.com'],
    ['a username', 'https://me@pcg.example.com', [parts.username], 'https://pcg.example.com'],
    ['a password', 'https://:secret@pcg.example.com', [parts.password], 'https://pcg.example.com'],
    [
      'several at once',
      'https://me:secret@PCG.example.com:443/mcp?x=1#y',
      [parts.path('/mcp'), parts.query('x=1'), parts.fragment('y'), parts.username, parts.password],
      'https://pcg.example.com',
    ],
    ['a path on http loopback', 'http://localhost:8788/mcp', [parts.path('/mcp')], 'http://localhost:8788'],
  ])('%s: %s', (_label, input, named, origin) => {
    const result = parsePublicOrigin(input);
    expect(result).toEqual({ ok: false, message: originOnly(named, origin) });
    expect(result.ok || result.message).toContain(`save "${origin}"`);
  });

  it('words the message as the spec example does', () => {
    expect(parsePublicOrigin('https://pcg.example.com/mcp')).toEqual({
      ok: false,
      message: 'publicOrigin must be an origin only: remove the path "/mcp" and save "https://pcg.example.com"',
    });
  });

  it('never echoes credentials', () => {
    const result = parsePublicOrigin('https://alice:hunter2@pcg.example.com');
    expect(result.ok).toBe(false);
    expect(JSON.stringify(result)).not.toMatch(/alice|hunter2/);
  });
});

describe('parsePublicOrigin requires https except on loopback', () => {
  it.each([
    ['http://pcg.example.com', 'https://pcg.example.com'],
    ['http://PCG.example.com:8080/mcp', 'https://pcg.example.com'],
    ['http://203.0.113.7', 'https://203.0.113.7'],
    ['http://localhost.', 'https://localhost.'],
    ['http://foo.localhost', 'https://foo.localhost'],
  ])('%s is refused, naming %s', (input, origin) => {
    const result = parsePublicOrigin(input);
    expect(result).toEqual({ ok: false, message: httpsRequired(origin) });
    expect(result.ok || result.message).toMatch(/https.*agent keys and bridge tokens/);
  });
});

describe('parsePublicOrigin refuses what is not an http(s) address', () => {
  it.each(['', '   ', 'garbage', 'pcg.example.com', 'ftp://pcg.example.com', 'javascript:alert(1)', 'file:///etc/passwd', 'ws://localhost', 'https://'])(
    '%j',
    (input) => {
      expect(parsePublicOrigin(input)).toEqual({ ok: false, message: notAnOrigin });
    },
  );

  it('gives an example and says null switches the bridge off', () => {
    expect(notAnOrigin).toContain('https://pcg.example.com');
    expect(notAnOrigin).toContain('null');
  });
});

describe('mcpResourceOf and settings events', () => {
  it('appends /mcp to the origin', () => {
    expect(mcpResourceOf('https://pcg.example.com:8443')).toBe('https://pcg.example.com:8443/mcp');
  });

  it.each([
    ['{"setting":"public_origin"}', { setting: 'public_origin' }],
    ['{"setting":"query_cursor_key"}', null],
    ['{}', null],
    ['not json', null],
  ])('parseSettingsEvent(%s)', (message, event) => {
    expect(parseSettingsEvent(message)).toEqual(event);
  });
});
