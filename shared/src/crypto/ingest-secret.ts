import { randomBytes, timingSafeEqual } from 'node:crypto';
import { secretDigest } from './secret-digest.ts';

/** Recognisable prefix, so secret scanners and operators can tell an ingest secret from other keys. */
export const INGEST_SECRET_PREFIX = 'pcgis_';
const SECRET_BYTES = 32;
const DIGEST_BYTES = 32;
/** Compared against when no usable hash is stored, so a refusal costs the same as a wrong secret. */
const UNUSABLE = Buffer.alloc(DIGEST_BYTES);

export function hashIngestSecret(secret: string): Buffer {
  return secretDigest(secret);
}

/** A new push secret: 32 random bytes (spec 8), shown once; only its SHA-256 is stored (spec 2.4). */
export function generateIngestSecret(): { secret: string; hash: Buffer } {
  const secret = `${INGEST_SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString('base64url')}`;
  return { secret, hash: hashIngestSecret(secret) };
}

/**
 * Whether a presented secret matches the stored hash, comparing two 32-byte digests in constant time
 * (spec 5). No stored hash, or one of the wrong length, fails closed after the same work.
 */
export function ingestSecretMatches(presented: string | undefined, storedHash: Buffer | null | undefined): boolean {
  const digest = hashIngestSecret(presented ?? '');
  const usable = storedHash instanceof Buffer && storedHash.length === DIGEST_BYTES;
  const equal = timingSafeEqual(digest, usable ? storedHash : UNUSABLE);
  return usable && equal && presented !== undefined && presented.length > 0;
}
