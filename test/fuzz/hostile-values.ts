import fc from 'fast-check';

/** Values that broke or could break a boundary: NUL, lone surrogates, impossible dates, out-of-range instants, injection text. */
export const HOSTILE_TEXT = [
  '',
  ' ',
  '\u0000',
  'fin\u0000ance',
  '\ud800',
  'a\udfffb',
  '\u202e',
  '%00',
  '%',
  "'; DROP TABLE agents; --",
  '" OR 1=1 --',
  '$1',
  '../../etc/passwd',
  '<script>alert(1)</script>',
  '__proto__',
  'constructor',
  '*',
  'finance',
  'home',
  'health',
  '2026-02-30',
  '2026-04-31',
  '0000-01-01',
  '10000-01-01',
  '275760-09-13T00:00:00Z',
  '-000001-01-01T00:00:00Z',
  '0000-01-01T00:00:00Z',
  '0000-01-01 00:00:00 +0000',
  '2026-13-01T00:00:00Z',
  '1e15',
  'NaN',
  'Infinity',
  '9'.repeat(400),
  'x'.repeat(70_000),
] as const;

export const HOSTILE_NUMBERS = [0, -0, -1, 1.5, 1e15, 1e308, -1e308, 2 ** 53 + 1, 3650, 3651, 200, 201, 1000, 1001] as const;

export const hostileText: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_TEXT) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...HOSTILE_TEXT), fc.string({ maxLength: 8 })).map(([a, b]) => a + b) },
);

export const hostileNumber: fc.Arbitrary<number> = fc.oneof(fc.constantFrom(...HOSTILE_NUMBERS), fc.double({ noNaN: true }), fc.integer());

export const hostileAtom: fc.Arbitrary<unknown> = fc.oneof(hostileText, hostileNumber, fc.boolean(), fc.constant(null));

/** Any JSON value, nested a few levels, with hostile leaves and keys. */
export const hostileJson: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, hostileAtom, tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 5 }),
  object: fc.dictionary(hostileText, tie('value'), { maxKeys: 5 }),
})).value;

/** Either a plausible value from `choices` or a hostile one, so requests get past the first checks often enough. */
export function plausible<T>(choices: readonly T[], weight = 3): fc.Arbitrary<T | unknown> {
  return fc.oneof({ weight, arbitrary: fc.constantFrom(...choices) }, { weight: 1, arbitrary: hostileAtom }, { weight: 1, arbitrary: hostileJson });
}

/** A body that is not JSON at all, or JSON cut short. */
export const brokenJsonText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('', '{', '[', '{"a":', 'null', 'undefined', '{"__proto__":{"polluted":1}}', '\u0000', '[]'.repeat(2_000), '['.repeat(5_000)),
  fc.string({ unit: 'binary', maxLength: 60 }),
);

/**
 * Percent-encodes text for a URL the way `encodeURIComponent` does, except that a lone surrogate (which
 * `encodeURIComponent` refuses) becomes its three-byte form: bytes that are not valid UTF-8, as a hostile
 * client would send them.
 */
export function percentEncode(text: string): string {
  let out = '';
  for (let index = 0; index < text.length; index += 1) {
    const unit = text.charCodeAt(index);
    const isHigh = unit >= 0xd800 && unit <= 0xdbff;
    const next = text.charCodeAt(index + 1);
    if (isHigh && next >= 0xdc00 && next <= 0xdfff) {
      out += encodeURIComponent(text.slice(index, index + 2));
      index += 1;
    } else if (unit >= 0xd800 && unit <= 0xdfff) {
      out += [0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f)].map((byte) => `%${byte.toString(16).toUpperCase()}`).join('');
    } else out += encodeURIComponent(text[index]!);
  }
  return out;
}

/** A path segment, percent-encoded so that the request line stays valid HTTP (a lone `%` is kept raw). */
export const pathSegment: fc.Arbitrary<string> = hostileText.map((text) => percentEncode(text.slice(0, 300)).replace(/%25/g, '%'));

/** A generated value as text: strings as they are, anything else as its JSON. */
export function asText(value: unknown): string {
  return typeof value === 'string' ? value : (JSON.stringify(value) ?? 'undefined');
}

/** A query string of known and unknown names. */
export function queryString(names: readonly string[]): fc.Arbitrary<string> {
  return fc
    .array(fc.tuple(plausible(names, 4), hostileText), { maxLength: 5 })
    .map((pairs) => pairs.map(([name, value]) => `${percentEncode(asText(name))}=${percentEncode(value.slice(0, 300))}`).join('&'));
}
