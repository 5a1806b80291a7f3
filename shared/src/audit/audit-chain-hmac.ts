import { hash } from 'node:crypto';

/** SHA-256's block size in bytes: the padded keys' length (RFC 2104's B). */
const BLOCK_BYTES = 64;
const DIGEST_BYTES = 32;
/** UTF-16 units to the most UTF-8 bytes they can take. */
const MAX_BYTES_PER_UNIT = 3;

/** A message written in parts (UTF-8), then digested in hex; `digest` starts the next message. */
export type TextDigest = {
  write(text: string): void;
  digest(): string;
};

/**
 * The digest a chain link is, for many messages: HMAC-SHA-256 (RFC 2104) under `key`, that is
 * H((K ⊕ opad) ‖ H((K ⊕ ipad) ‖ m)), or SHA-256 of the message when `key` is null. The padded key pair is
 * computed once; each message's parts are written straight into a buffer kept across messages (behind
 * the inner padded key), so no joined string is built, and it is hashed by one-shot `crypto.hash` calls.
 * The same bytes as `createHmac('sha256', key).update(m).digest('hex')` (or `hash('sha256', m)`), without
 * what `createHmac` costs a row: a native Hmac object and its JavaScript stream wrapper, which the garbage
 * collector must then finalize (issue 44). The inner digest passes to the outer hash as hex text written
 * into the outer buffer, because a one-shot hash's Buffer output is a fresh native allocation, itself
 * slower than the Hmac object. Not reentrant: one message at a time, which synchronous linking is.
 */
export function createTextDigest(key: Buffer | null): TextDigest {
  const start = key === null ? 0 : BLOCK_BYTES;
  // RFC 2104: a key longer than the block is hashed first; a shorter one is padded with zeros.
  const blockKey = Buffer.alloc(BLOCK_BYTES);
  if (key !== null) (key.length > BLOCK_BYTES ? hash('sha256', key, 'buffer') : key).copy(blockKey);
  const padded = (pad: number) => Buffer.from(blockKey.map((byte) => byte ^ pad));
  let inner = Buffer.concat([padded(0x36).subarray(0, start), Buffer.alloc(4096)]);
  const outer = Buffer.concat([padded(0x5c), Buffer.alloc(DIGEST_BYTES)]);
  let end = start;
  return {
    write(text) {
      const bound = end + text.length * MAX_BYTES_PER_UNIT;
      if (bound > inner.length) inner = Buffer.concat([inner.subarray(0, end), Buffer.alloc(Math.max(bound, 2 * inner.length) - end)]);
      end += inner.write(text, end, 'utf8');
    },
    digest() {
      const innerHex = hash('sha256', inner.subarray(0, end), 'hex');
      end = start;
      if (key === null) return innerHex;
      outer.write(innerHex, BLOCK_BYTES, DIGEST_BYTES, 'hex');
      return hash('sha256', outer, 'hex');
    },
  };
}
