import { describe, expect, it } from 'vitest';
import {
  buildAuditRow,
  isSensitiveFieldName,
  redactArgs,
  serializeAuditArgs,
  storableText,
  UnserializableArgsError,
} from './audit-fns.ts';
import { AUDIT_LOG_LINES, type AuditEvent } from './audit-types.ts';

const R = '[redacted]';
const TRUNCATED = JSON.stringify('[truncated]');
/**
 * Spec 8 caps audit args at "about 4 KB serialized"; the gateway reads that as 4096 bytes of the redacted
 * JSON's UTF-8 (docs/decisions.md: "the 4 KB cap is measured on the redacted JSON in UTF-8 bytes").
 */
const ARGS_CAP_BYTES = 4096;

describe('the audit log lines', () => {
  it('are the texts of spec 8, word for word (the em dash included)', () => {
    expect(AUDIT_LOG_LINES.queueOverflow).toBe('[audit] queue overflow \u2014 dropped');
    expect(AUDIT_LOG_LINES.flushFailed).toBe('[audit] flush failed, dropped batch:');
  });
});

describe('redactArgs (spec 8)', () => {
  it.each<[string, unknown, unknown]>([
    ['a flat password', { password: 'hunter2', q: 'x' }, { password: R, q: 'x' }],
    ['every listed word, any case', { PASSWD: 1, clientSecret: 2, Access_Token: 3, APIKEY: 4, Authorization: 5, Cookie: 6 },
      { PASSWD: R, clientSecret: R, Access_Token: R, APIKEY: R, Authorization: R, Cookie: R }],
    ['apiKey', { apiKey: 'sk-live-123' }, { apiKey: R }],
    ['x-cookie-jar', { 'x-cookie-jar': 'a=b' }, { 'x-cookie-jar': R }],
    ['a name that merely contains a word', { passage: 'text', monkey: 'banana', tokens: ['a', 'b'] }, { passage: R, monkey: R, tokens: R }],
    ['nested objects', { a: { b: { refresh_token: 'r', depth: 3 } } }, { a: { b: { refresh_token: R, depth: 3 } } }],
    ['arrays of objects', { items: [{ secret: 's', n: 1 }, { n: 2, headers: { authorization: 'Bearer x' } }] },
      { items: [{ secret: R, n: 1 }, { n: 2, headers: { authorization: R } }] }],
    ['a whole object under a sensitive name, never looked into', { passwords: { user: 'u', nested: [1] }, keyring: null },
      { passwords: R, keyring: R }],
    ['only the six words: other names stay, however sensitive they sound', { credentials: { user: 'u' }, pin: '1234' },
      { credentials: { user: 'u' }, pin: '1234' }],
    ['values that look like secrets under harmless names', { q: 'password=hunter2', note: 'Bearer abc.def', id: 'sk-live-123', list: ['token'] },
      { q: 'password=hunter2', note: 'Bearer abc.def', id: 'sk-live-123', list: ['token'] }],
    ['a top-level array', [{ cookie: 'c' }, 'secret'], [{ cookie: R }, 'secret']],
    ['scalars at the top', 'api key in a string', 'api key in a string'],
    ['undefined fields left out and dates as text, as JSON would', { a: undefined, at: new Date('2026-03-01T00:00:00Z') },
      { at: '2026-03-01T00:00:00.000Z' }],
  ])('%s', (_name, input, expected) => {
    expect(redactArgs(input)).toEqual(expected);
  });

  it('does not change its input', () => {
    const input = { token: 't', inner: { password: 'p' } };
    redactArgs(input);
    expect(input).toEqual({ token: 't', inner: { password: 'p' } });
  });

  it('keeps a value shared by two fields (not a cycle)', () => {
    const shared = { n: 1 };
    expect(redactArgs({ a: shared, b: shared })).toEqual({ a: { n: 1 }, b: { n: 1 } });
  });

  it('refuses a cycle', () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = { back: cyclic };
    expect(() => redactArgs(cyclic)).toThrow(UnserializableArgsError);
  });

  it.each(['pass', 'secret', 'token', 'key', 'authorization', 'cookie'])('treats any name containing %s as sensitive', (word) => {
    expect(isSensitiveFieldName(`my${word.toUpperCase()}Field`)).toBe(true);
  });

  it.each(['query', 'sector', 'limit', 'cursor', 'id', 'where'])('leaves %s alone', (name) => {
    expect(isSensitiveFieldName(name)).toBe(false);
  });
});

describe('serializeAuditArgs (spec 8 size and shape rules)', () => {
  it('stores the redacted JSON', () => {
    expect(JSON.parse(serializeAuditArgs({ object: 'finance.account', token: 'x' }))).toEqual({ object: 'finance.account', token: R });
  });

  it('keeps args just under the cap and truncates args just over it', () => {
    const overhead = JSON.stringify({ q: '' }).length;
    const fits = { q: 'a'.repeat(ARGS_CAP_BYTES - overhead) };
    const over = { q: 'a'.repeat(ARGS_CAP_BYTES - overhead + 1) };
    expect(serializeAuditArgs(fits)).toBe(JSON.stringify(fits));
    expect(serializeAuditArgs(over)).toBe(TRUNCATED);
  });

  it('counts bytes, not characters', () => {
    // 2000 euro signs are 2000 characters but 6000 UTF-8 bytes.
    expect(serializeAuditArgs({ q: '\u20ac'.repeat(2000) })).toBe(TRUNCATED);
    expect(serializeAuditArgs({ q: 'e'.repeat(2000) })).not.toBe(TRUNCATED);
  });

  it('measures after redaction: a long secret does not push args over the cap', () => {
    expect(JSON.parse(serializeAuditArgs({ password: 'p'.repeat(10_000), q: 1 }))).toEqual({ password: R, q: 1 });
  });

  it('abandons a huge payload without walking all of it', () => {
    let reads = 0;
    const huge = new Proxy(new Array(1_000_000).fill(1), {
      get(target, property, receiver) {
        if (typeof property === 'string' && /^\d+$/.test(property)) reads += 1;
        return Reflect.get(target, property, receiver);
      },
    });
    expect(serializeAuditArgs({ huge })).toBe(TRUNCATED);
    expect(reads).toBeLessThan(5_000);
  });

  it.each<[string, () => unknown]>([
    ['cyclic', () => {
      const node: Record<string, unknown> = { name: 'n' };
      node.children = [node];
      return node;
    }],
    ['a BigInt', () => ({ amount: 10n })],
    ['a function', () => ({ callback: () => 1 })],
    ['a symbol', () => ({ tag: Symbol('x') })],
    ['a throwing getter', () => ({ get bad(): never { throw new Error('no') } })],
    ['a throwing toJSON', () => ({ at: { toJSON(): never { throw new Error('no') } } })],
    ['nesting 200,000 levels deep', () => {
      let deep: unknown[] = [];
      for (let level = 0; level < 200_000; level += 1) deep = [deep];
      return deep;
    }],
  ])('stores "[truncated]" for %s args', (_name, make) => {
    expect(serializeAuditArgs(make())).toBe(TRUNCATED);
  });

  it('redacts a BigInt or a function under a sensitive name without looking at it', () => {
    expect(JSON.parse(serializeAuditArgs({ apiKey: 10n, tokenFn: () => 1 }))).toEqual({ apiKey: R, tokenFn: R });
  });

  it('replaces NUL and unpaired surrogates, which Postgres refuses, in keys and values', () => {
    const json = serializeAuditArgs({ 'a\u0000b': 'x\u0000y', lone: '\ud800', pair: '\ud83d\ude00', text: 'back\\u0000slash' });
    expect(JSON.parse(json)).toEqual({ 'a\ufffdb': 'x\ufffdy', lone: '\ufffd', pair: '\ud83d\ude00', text: 'back\\u0000slash' });
  });
});

describe('buildAuditRow (spec 2.3)', () => {
  const base: AuditEvent = { agentId: 'claude', tool: 'query', sector: 'finance', decision: 'allow', outcome: 'ok', args: { object: 'finance.account' } };

  it('builds the queued row with the defaults filled in', () => {
    const { row } = buildAuditRow(base, { newRequestId: () => 'req-1' });
    expect(row).toEqual({
      userId: 1, agentId: 'claude', tool: 'query', sector: 'finance', decision: 'allow', denyReason: null,
      argsJson: '{"object":"finance.account"}', resultCount: 0, outcome: 'ok', requestId: 'req-1',
    });
  });

  it('keeps a request id it was given and generates a distinct one otherwise', () => {
    expect(buildAuditRow({ ...base, requestId: 'given' }).row.requestId).toBe('given');
    const first = buildAuditRow(base).row.requestId;
    const second = buildAuditRow(base).row.requestId;
    expect(first).toMatch(/^[0-9a-f-]{36}$/);
    expect(first).not.toBe(second);
  });

  it('stores a null agent for ingest and for a refused initialize, whatever the surface passed', () => {
    expect(buildAuditRow({ ...base, tool: 'ingest', agentId: 'conn-1' }).row.agentId).toBeNull();
    expect(buildAuditRow({ ...base, tool: 'initialize', decision: 'deny', agentId: 'x' }).row.agentId).toBeNull();
    expect(buildAuditRow({ ...base, tool: 'initialize', decision: 'allow' }).row.agentId).toBe('claude');
  });

  it('never lets a deny reason into the sector column', () => {
    const reason = 'access denied: revoked';
    const built = buildAuditRow({ ...base, decision: 'deny', denyReason: reason, sector: reason });
    expect(built.row.sector).toBeNull();
    expect(built.discardedSector).toBe(reason);
    expect(buildAuditRow({ ...base, decision: 'deny', denyReason: 'unauthorized', sector: 'unauthorized' }).row.sector).toBeNull();
    // Sector names are not checked against the six: a removed sector is still recorded.
    expect(buildAuditRow({ ...base, sector: 'travel' }).row.sector).toBe('travel');
  });

  it('refuses an event that breaks the contract', () => {
    expect(() => buildAuditRow({ ...base, tool: '' })).toThrow();
    expect(() => buildAuditRow({ ...base, resultCount: -1 })).toThrow();
  });

  it('makes text columns storable', () => {
    expect(buildAuditRow({ ...base, tool: 'q\u0000', denyReason: 'r\ud800' }).row).toMatchObject({ tool: 'q\ufffd', denyReason: 'r\ufffd' });
    expect(storableText('plain')).toBe('plain');
  });
});
