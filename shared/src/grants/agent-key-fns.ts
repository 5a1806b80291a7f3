import { randomBytes, timingSafeEqual } from 'node:crypto';
import { secretDigest } from '../crypto/secret-digest.ts';

/**
 * Agent keys are `pcg_` followed by 32 random bytes in base64url (43 characters): 256 bits of randomness
 * (spec 2.2) behind a prefix that secret scanners and people recognise. Bridge tokens use `pcgat_`,
 * which this prefix does not match.
 */
export const AGENT_KEY_PREFIX = 'pcg_';
const KEY_BYTES = 32;
const KEY_BODY_LENGTH = 43;
const KEY_PATTERN = new RegExp(`^${AGENT_KEY_PREFIX}[A-Za-z0-9_-]{${KEY_BODY_LENGTH}}$`);

export function generateAgentKey(): string {
  return `${AGENT_KEY_PREFIX}${randomBytes(KEY_BYTES).toString('base64url')}`;
}

/** Whether a string is shaped like an agent key; says nothing about whether a grant holds it. */
export function isWellFormedAgentKey(key: string): boolean {
  return KEY_PATTERN.test(key);
}

/** SHA-256 of the key: the only form of it that is ever stored (spec 2.2). */
export function hashAgentKey(key: string): Buffer {
  return secretDigest(key);
}

/** Constant-time comparison of two key hashes; anything but two 32-byte digests fails closed. */
export function keyHashesEqual(a: Buffer, b: Buffer): boolean {
  if (a.length !== 32 || b.length !== 32) return false;
  return timingSafeEqual(a, b);
}

export type BearerCredential = { kind: 'none' } | { kind: 'token'; token: string };

/**
 * Reads an `Authorization` header value (spec 5): the scheme word `Bearer` in any case, then the token.
 * No header, another scheme, or `Bearer` with nothing (or only whitespace) after it counts as no key.
 * Whitespace around the token is ignored; whitespace inside it is kept, so such a token is malformed.
 * Callers find the header case-insensitively (Node lower-cases header names).
 */
export function parseBearer(headerValue: string | undefined): BearerCredential {
  if (headerValue === undefined) return { kind: 'none' };
  // The scheme, one blank, then the rest (a group every match fills): trimmed, so more blanks change nothing.
  const token = /^[ \t]*bearer[ \t](.*)/is.exec(headerValue)?.[1]!.trim();
  return token ? { kind: 'token', token } : { kind: 'none' };
}
