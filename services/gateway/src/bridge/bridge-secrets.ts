import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { secretDigest } from '@pcg/shared/crypto';

/**
 * The bridge's own credentials. Each is 32 random bytes in base64url behind a prefix a person or a secret
 * scanner recognises; only the SHA-256 is stored. Access tokens carry `pcgat_` (spec 2.4).
 */
export const BRIDGE_PREFIXES = {
  accessToken: 'pcgat_',
  refreshToken: 'pcgrt_',
  code: 'pcgac_',
  client: 'pcgc_',
} as const;

export type BridgeSecretKind = keyof typeof BRIDGE_PREFIXES;

export function generateBridgeSecret(kind: BridgeSecretKind): string {
  return `${BRIDGE_PREFIXES[kind]}${randomBytes(32).toString('base64url')}`;
}

/** A client id is public, so it needs no more than 128 bits. */
export function generateClientId(): string {
  return `${BRIDGE_PREFIXES.client}${randomBytes(16).toString('base64url')}`;
}

export function hashBridgeSecret(secret: string): Buffer {
  return secretDigest(secret);
}

export function isAccessToken(token: string): boolean {
  return token.startsWith(BRIDGE_PREFIXES.accessToken);
}

/** RFC 7636 4.1: 43 to 128 unreserved characters. */
const VERIFIER_PATTERN = /^[A-Za-z0-9._~-]{43,128}$/;
/** An S256 challenge is the base64url of a SHA-256: 43 characters. */
export const S256_CHALLENGE_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** Whether `verifier` answers the S256 `challenge` (RFC 7636 4.6), compared in constant time. */
export function pkceVerifierMatches(verifier: string, challenge: string): boolean {
  if (!VERIFIER_PATTERN.test(verifier) || !S256_CHALLENGE_PATTERN.test(challenge)) return false;
  const computed = Buffer.from(createHash('sha256').update(verifier, 'ascii').digest('base64url'));
  const expected = Buffer.from(challenge);
  return computed.length === expected.length && timingSafeEqual(computed, expected);
}

const REPLAY_INFO = Buffer.from('pcg bridge refresh replay');

function replayKey(refreshToken: string): Buffer {
  return Buffer.from(hkdfSync('sha256', Buffer.from(refreshToken, 'utf8'), Buffer.alloc(0), REPLAY_INFO, 32));
}

/**
 * Seals what a refresh answered with a key derived from the refresh token that was spent: the store then
 * holds nothing a reader of the database could use, yet the holder of the spent token can be given the
 * same answer again during the replay grace.
 */
export function sealReplay(spentRefreshToken: string, answer: unknown): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', replayKey(spentRefreshToken), iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(answer), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]);
}

/** The sealed answer, or null when it cannot be opened with this token. */
export function openReplay(spentRefreshToken: string, sealed: Buffer): unknown {
  try {
    const decipher = createDecipheriv('aes-256-gcm', replayKey(spentRefreshToken), sealed.subarray(0, 12));
    decipher.setAuthTag(sealed.subarray(12, 28));
    const text = Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]).toString('utf8');
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}
