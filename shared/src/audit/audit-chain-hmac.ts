import { hash } from 'node:crypto';

/** SHA-256's block size in bytes: the padded keys' length (RFC 2104's B). */
const BLOCK_BYTES = 64;
const DIGEST_BYTES = 32;
/** UTF-16 units to the most UTF-8 bytes they can take. */
const MAX_BYTES_PER_UNIT = 3;

/**
 * HMAC-SHA-256 (RFC 2104) under one key, for many messages, in hex: H((K ⊕ opad) ‖ H((K ⊕ ipad) ‖ m)),
 * with the padded key pair computed once and each message hashed by two one-shot `crypto.hash` calls
 * into buffers allocated once. The same bytes as `createHmac('sha256', key).update(m).digest('hex')`,
 * without what that costs a row: a native Hmac object and its JavaScript stream wrapper, which the
 * garbage collector must then finalize (issue 44: about half of a keyed flush's time on the writer's
 * thread). The digests pass between the two hashes as hex text written into the outer buffer, because a
 * one-shot hash's Buffer output is a fresh native allocation, itself slower than the HMAC object.
 * Not reentrant (it writes into its own buffers), which a synchronous call never needs.
 */
export function createHmacSha256Hex(key: Buffer): (message: string) => string {
  // RFC 2104: a key longer than the block is hashed first; a shorter one is padded with zeros.
  const blockKey = Buffer.alloc(BLOCK_BYTES);
  (key.length > BLOCK_BYTES ? hash('sha256', key, 'buffer') : key).copy(blockKey);
  const padded = (pad: number) => Buffer.from(blockKey.map((byte) => byte ^ pad));
  let inner = Buffer.concat([padded(0x36), Buffer.alloc(4096)]);
  const outer = Buffer.concat([padded(0x5c), Buffer.alloc(DIGEST_BYTES)]);
  return (message) => {
    const bound = BLOCK_BYTES + message.length * MAX_BYTES_PER_UNIT;
    if (bound > inner.length) inner = Buffer.concat([inner.subarray(0, BLOCK_BYTES), Buffer.alloc(bound - BLOCK_BYTES)]);
    const written = inner.write(message, BLOCK_BYTES, 'utf8');
    outer.write(hash('sha256', inner.subarray(0, BLOCK_BYTES + written), 'hex'), BLOCK_BYTES, DIGEST_BYTES, 'hex');
    return hash('sha256', outer, 'hex');
  };
}
