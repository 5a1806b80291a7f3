import { createHmac, hash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createTextDigest } from './audit-chain-hmac.ts';

/** The digest of `text`, written in one part. */
function digestOf(digest: ReturnType<typeof createTextDigest>, text: string): string {
  digest.write(text);
  return digest.digest();
}

/** Any code point, or any single UTF-16 unit (so lone surrogates too). */
const anyUnit = fc.oneof(fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }), fc.integer({ min: 0, max: 0xffff }).map((unit) => String.fromCharCode(unit)));

describe('createTextDigest', () => {
  // RFC 4231 section 4, HMAC-SHA-256, the cases whose data is text (the chain only ever MACs text).
  it.each([
    ['1: a 20-byte key', Buffer.alloc(20, 0x0b), 'Hi There', 'b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7'],
    ['2: a key shorter than the output', Buffer.from('Jefe'), 'what do ya want for nothing?', '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843'],
    ['6: a key longer than the block', Buffer.alloc(131, 0xaa), 'Test Using Larger Than Block-Size Key - Hash Key First', '60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54'],
    [
      '7: a key and data longer than the block',
      Buffer.alloc(131, 0xaa),
      'This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.',
      '9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2',
    ],
  ])('gives RFC 4231 test case %s', (_, key, data, expected) => {
    expect(digestOf(createTextDigest(key), data)).toBe(expected);
  });

  it.each([63, 64, 65])("gives createHmac's bytes under a key of %i bytes, around SHA-256's 64-byte block (RFC 2104: only a longer key is hashed first)", (length) => {
    const key = Buffer.alloc(length, 0x42);
    expect(digestOf(createTextDigest(key), 'Hi There')).toBe(createHmac('sha256', key).update('Hi There').digest('hex'));
  });

  it("gives createHmac's bytes (or, with no key, hash's) for any key and text written in any parts, one digest reused across messages of every length (wide characters and lone surrogates too)", () => {
    const parts = fc.array(fc.string({ unit: anyUnit, maxLength: 1500 }), { maxLength: 4 });
    fc.assert(
      fc.property(fc.option(fc.uint8Array({ maxLength: 200 })), fc.array(parts, { minLength: 1, maxLength: 6 }), (keyBytes, messages) => {
        const key = keyBytes === null ? null : Buffer.from(keyBytes);
        const digest = createTextDigest(key);
        for (const message of messages) {
          for (const part of message) digest.write(part);
          const text = message.join('');
          expect(digest.digest()).toBe(key === null ? hash('sha256', text, 'hex') : createHmac('sha256', key).update(text).digest('hex'));
        }
      }),
      { numRuns: 300, seed: 44 },
    );
  });

  it('gives the MAC of a long first message (10,000 characters in one part), and the same MAC for a message after a longer one (no bytes of the longer one are left in)', () => {
    const key = Buffer.alloc(32, 7);
    const digest = createTextDigest(key);
    const long = 'x'.repeat(10_000);
    expect(digestOf(digest, long)).toBe(createHmac('sha256', key).update(long).digest('hex'));
    expect(digestOf(digest, 'short')).toBe(createHmac('sha256', key).update('short').digest('hex'));
    expect(digestOf(digest, long)).toBe(createHmac('sha256', key).update(long).digest('hex'));
  });
});
