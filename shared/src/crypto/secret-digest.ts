import { createHash } from 'node:crypto';

/** SHA-256 of a secret's UTF-8 bytes: the one form in which a key, a push secret, a setup token or a sign-in state is stored or looked up. */
export function secretDigest(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest();
}
