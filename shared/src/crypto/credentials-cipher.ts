import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/** Layout of a sealed value: version (1 byte) | IV (12) | GCM tag (16) | ciphertext. */
const VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const HEADER_BYTES = 1 + IV_BYTES + TAG_BYTES;
export const CREDENTIALS_KEY_BYTES = 32;

export class CredentialsCipherError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CredentialsCipherError';
  }
}

function checkKey(key: Buffer): void {
  if (key.length !== CREDENTIALS_KEY_BYTES) throw new CredentialsCipherError(`the credentials key must be ${CREDENTIALS_KEY_BYTES} bytes`);
}

/**
 * Seals a JSON value with AES-256-GCM (design 4.9). `context` is bound as additional authenticated data
 * (the connection id), so a sealed value copied onto another connection row does not open there.
 */
export function sealCredentials(key: Buffer, value: unknown, context: string): Buffer {
  checkKey(key);
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(context, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
  return Buffer.concat([Buffer.from([VERSION]), iv, cipher.getAuthTag(), ciphertext]);
}

/** Opens what `sealCredentials` sealed with the same key and context; any tampering or a wrong key throws. */
export function openCredentials(key: Buffer, sealed: Buffer, context: string): unknown {
  checkKey(key);
  if (sealed.length <= HEADER_BYTES || sealed[0] !== VERSION) throw new CredentialsCipherError('sealed credentials are malformed');
  const iv = sealed.subarray(1, 1 + IV_BYTES);
  const tag = sealed.subarray(1 + IV_BYTES, HEADER_BYTES);
  const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
  decipher.setAAD(Buffer.from(context, 'utf8'));
  decipher.setAuthTag(tag);
  let plaintext: Buffer;
  try {
    plaintext = Buffer.concat([decipher.update(sealed.subarray(HEADER_BYTES)), decipher.final()]);
  } catch {
    // Never say more: the same answer for a wrong key, a wrong context and tampering.
    throw new CredentialsCipherError('sealed credentials do not open with this key');
  }
  return JSON.parse(plaintext.toString('utf8')) as unknown;
}
