import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, compareCanonicalKeys } from './audit-chain-fns.ts';

/** The same value with every object's keys inserted in reverse order. */
function reversed(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(reversed);
  const out = Object.create(null) as Record<string, unknown>;
  for (const key of Object.keys(value).reverse()) out[key] = reversed((value as Record<string, unknown>)[key]);
  return out;
}

describe('canonicalJson', () => {
  it('gives one text for a value whatever its key order, and that text parses back to the value', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), (value) => {
        const text = canonicalJson(value);
        expect(canonicalJson(reversed(value))).toBe(text);
        expect(canonicalJson(JSON.parse(text))).toBe(text);
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(value)));
      }),
      { numRuns: 500, seed: 22 },
    );
  });

  it("orders keys as jsonb does: shorter UTF-8 first, then bytewise, index-like keys included", () => {
    expect(canonicalJson({ bb: 1, a: 2, 10: 3, 9: 4, é: 5, z: 6 })).toBe('{"9":4,"a":2,"z":6,"10":3,"bb":1,"é":5}');
    expect(['\uffff', '\ud83d\ude00', 'e'].sort(compareCanonicalKeys)).toEqual(['e', '\uffff', '\ud83d\ude00']);
  });
});
