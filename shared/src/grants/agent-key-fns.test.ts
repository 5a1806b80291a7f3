import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { AGENT_KEY_PREFIX, generateAgentKey, hashAgentKey, isWellFormedAgentKey, keyHashesEqual, parseBearer } from './agent-key-fns.ts';

describe('agent keys', () => {
  it('carry the prefix and 32 random bytes in base64url (spec 2.2: 256 bits)', () => {
    const key = generateAgentKey();
    expect(key.startsWith(AGENT_KEY_PREFIX)).toBe(true);
    const body = Buffer.from(key.slice(AGENT_KEY_PREFIX.length), 'base64url');
    expect(body).toHaveLength(32);
    expect(isWellFormedAgentKey(key)).toBe(true);
  });

  it('never repeat', () => {
    const keys = new Set(Array.from({ length: 1000 }, generateAgentKey));
    expect(keys.size).toBe(1000);
  });

  it('are stored as their SHA-256', () => {
    const key = generateAgentKey();
    expect(hashAgentKey(key).equals(createHash('sha256').update(key).digest())).toBe(true);
    expect(hashAgentKey(key)).toHaveLength(32);
  });

  it.each([
    ['no prefix', generateAgentKey().slice(AGENT_KEY_PREFIX.length)],
    ['a bridge token prefix', `pcgat_${generateAgentKey().slice(AGENT_KEY_PREFIX.length)}`],
    ['one character short', generateAgentKey().slice(0, -1)],
    ['one character long', `${generateAgentKey()}A`],
    ['a character outside base64url', `${generateAgentKey().slice(0, -1)}+`],
    ['the prefix alone', AGENT_KEY_PREFIX],
    ['an upper-case prefix', `PCG_${generateAgentKey().slice(AGENT_KEY_PREFIX.length)}`],
  ])('are malformed with %s', (_label, key) => {
    expect(isWellFormedAgentKey(key)).toBe(false);
  });

  it('compare hashes by value, and fail closed on a digest of the wrong length', () => {
    const a = hashAgentKey('a');
    expect(keyHashesEqual(a, Buffer.from(a))).toBe(true);
    expect(keyHashesEqual(a, hashAgentKey('b'))).toBe(false);
    expect(keyHashesEqual(a.subarray(0, 16), a.subarray(0, 16))).toBe(false);
    expect(keyHashesEqual(Buffer.alloc(0), Buffer.alloc(0))).toBe(false);
    expect(keyHashesEqual(a, a.subarray(0, 16))).toBe(false);
    expect(keyHashesEqual(a.subarray(0, 16), a)).toBe(false);
    expect(keyHashesEqual(Buffer.concat([a, a]), a)).toBe(false);
  });
});

describe('the Authorization header (spec 5)', () => {
  it.each([
    ['Bearer k1', 'k1'],
    ['bearer k1', 'k1'],
    ['BEARER k1', 'k1'],
    ['BeArEr k1', 'k1'],
    ['Bearer   k1', 'k1'],
    ['Bearer k1   ', 'k1'],
    ['  Bearer k1', 'k1'],
    ['Bearer\tk1', 'k1'],
    ['\t Bearer k1', 'k1'],
    ['Bearer k1 k2', 'k1 k2'],
    ['Bearer k1\nk2', 'k1\nk2'],
  ])('reads %j as the token %j', (header, token) => {
    expect(parseBearer(header)).toEqual({ kind: 'token', token });
  });

  it.each([
    ['no header', undefined],
    ['an empty header', ''],
    ['spaces only', '   '],
    ['Bearer alone', 'Bearer'],
    ['Bearer and a space', 'Bearer '],
    ['Bearer and spaces', 'Bearer     '],
    ['lower-case bearer alone', 'bearer'],
    ['Basic', 'Basic dXNlcjpwYXNz'],
    ['Token', 'Token k1'],
    ['a scheme glued to the key', 'Bearerk1'],
    ['a bare key', 'pcg_k1'],
    ['a longer word ending in bearer', 'NotBearer k1'],
    ['a word before the scheme', 'x Bearer k1'],
    ['a newline after the scheme', 'Bearer\nk1'],
  ])('counts %s as no key', (_label, header) => {
    expect(parseBearer(header)).toEqual({ kind: 'none' });
  });
});
