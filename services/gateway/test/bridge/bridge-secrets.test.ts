import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  BRIDGE_PREFIXES,
  generateBridgeSecret,
  hashBridgeSecret,
  isAccessToken,
  openReplay,
  pkceVerifierMatches,
  sealReplay,
  type BridgeSecretKind,
} from '../../src/bridge/bridge-secrets.ts';

/** RFC 7636 Appendix B. */
const RFC_VERIFIER = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
const RFC_CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';

const kinds = Object.keys(BRIDGE_PREFIXES) as BridgeSecretKind[];

describe('bridge secrets', () => {
  it('gives access tokens the pcgat_ prefix of spec 2.4', () => {
    expect(BRIDGE_PREFIXES.accessToken).toBe('pcgat_');
    expect(generateBridgeSecret('accessToken').startsWith('pcgat_')).toBe(true);
  });

  it('uses a distinct prefix for each kind of secret', () => {
    expect(new Set(Object.values(BRIDGE_PREFIXES)).size).toBe(kinds.length);
  });

  it.each(kinds)('makes a %s of its prefix and 32 random bytes in base64url', (kind) => {
    const secret = generateBridgeSecret(kind);
    const prefix = BRIDGE_PREFIXES[kind];
    expect(secret.startsWith(prefix)).toBe(true);
    const body = secret.slice(prefix.length);
    expect(body).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(body, 'base64url')).toHaveLength(32);
  });

  it('never repeats a secret over 1000 draws', () => {
    const seen = new Set(Array.from({ length: 1000 }, () => generateBridgeSecret('accessToken')));
    expect(seen.size).toBe(1000);
  });

  it('recognises access tokens by their prefix only', () => {
    expect(isAccessToken(generateBridgeSecret('accessToken'))).toBe(true);
    expect(isAccessToken(generateBridgeSecret('refreshToken'))).toBe(false);
    expect(isAccessToken('pcg_agent_key')).toBe(false);
  });

  it('hashes a secret with SHA-256 of its UTF-8 text', () => {
    const secret = generateBridgeSecret('refreshToken');
    const hash = hashBridgeSecret(secret);
    expect(hash).toHaveLength(32);
    expect(hash.equals(createHash('sha256').update(Buffer.from(secret, 'utf8')).digest())).toBe(true);
    // The NIST test vector for SHA-256("abc").
    expect(hashBridgeSecret('abc').toString('hex')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});

describe('pkceVerifierMatches (RFC 7636 4.6, S256)', () => {
  it('accepts the RFC 7636 Appendix B verifier for its challenge', () => {
    expect(pkceVerifierMatches(RFC_VERIFIER, RFC_CHALLENGE)).toBe(true);
  });

  it('accepts a verifier of each length bound whose challenge is its S256', () => {
    for (const verifier of ['a'.repeat(43), `${'A'.repeat(124)}._~-`]) {
      const challenge = createHash('sha256').update(verifier, 'ascii').digest('base64url');
      expect(pkceVerifierMatches(verifier, challenge)).toBe(true);
    }
  });

  it.each([
    ['another valid verifier', `${RFC_VERIFIER.slice(0, -1)}Y`],
    ['the verifier with its case changed', RFC_VERIFIER.toUpperCase()],
    ['the challenge itself (plain method)', RFC_CHALLENGE],
  ])('refuses %s', (_label, verifier) => {
    expect(pkceVerifierMatches(verifier, RFC_CHALLENGE)).toBe(false);
  });

  it.each([
    ['too short (42 characters)', 'a'.repeat(42)],
    ['too long (129 characters)', 'a'.repeat(129)],
    ['a space', `${RFC_VERIFIER.slice(0, -1)} `],
    ['a plus sign', `${RFC_VERIFIER.slice(0, -1)}+`],
    ['a slash', `${RFC_VERIFIER.slice(0, -1)}/`],
    ['a non-ASCII letter', `${RFC_VERIFIER.slice(0, -1)}é`],
    ['empty', ''],
  ])('refuses a verifier that is %s, even when the challenge is its own S256', (_label, verifier) => {
    const challenge = createHash('sha256').update(verifier, 'utf8').digest('base64url');
    expect(pkceVerifierMatches(verifier, challenge)).toBe(false);
  });

  it.each([
    ['empty', ''],
    ['42 characters', RFC_CHALLENGE.slice(0, 42)],
    ['44 characters (padded)', `${RFC_CHALLENGE}=`],
    ['in base64 rather than base64url', createHash('sha256').update(RFC_VERIFIER, 'ascii').digest('base64')],
    ['in hex', createHash('sha256').update(RFC_VERIFIER, 'ascii').digest('hex')],
  ])('refuses a malformed challenge: %s', (_label, challenge) => {
    expect(pkceVerifierMatches(RFC_VERIFIER, challenge)).toBe(false);
  });
});

describe('sealReplay / openReplay', () => {
  const spent = generateBridgeSecret('refreshToken');
  const answer = { access_token: generateBridgeSecret('accessToken'), token_type: 'Bearer', expires_in: 3600, scope: null, nested: ['a', 1] };

  it('opens what it sealed with the same spent token', () => {
    expect(openReplay(spent, sealReplay(spent, answer))).toEqual(answer);
  });

  it('holds nothing readable of the answer', () => {
    const sealed = sealReplay(spent, answer);
    expect(sealed.includes(Buffer.from(answer.access_token))).toBe(false);
    expect(sealed.includes(Buffer.from('Bearer'))).toBe(false);
  });

  it('seals the same answer differently each time (fresh IV)', () => {
    expect(sealReplay(spent, answer).equals(sealReplay(spent, answer))).toBe(false);
  });

  it('answers null when opened with another token', () => {
    expect(openReplay(generateBridgeSecret('refreshToken'), sealReplay(spent, answer))).toBeNull();
  });

  it.each([
    ['the IV', 0],
    ['the auth tag', 12],
    ['the ciphertext', 28],
    ['the last byte', -1],
  ])('answers null when a byte of %s is changed', (_label, position) => {
    const sealed = sealReplay(spent, answer);
    const index = position < 0 ? sealed.length + position : position;
    sealed[index] = (sealed[index] ?? 0) ^ 0x01;
    expect(openReplay(spent, sealed)).toBeNull();
  });

  it('answers null for a truncated or empty box', () => {
    const sealed = sealReplay(spent, answer);
    expect(openReplay(spent, sealed.subarray(0, sealed.length - 1))).toBeNull();
    expect(openReplay(spent, Buffer.alloc(0))).toBeNull();
  });
});
