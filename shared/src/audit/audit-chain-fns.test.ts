import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { canonicalJson, canonicalRowText, chainHash, chainLink, compareCanonicalKeys, createChainLinker, keyedChainHash, rowScalarsJson, type ChainedRowContent } from './audit-chain-fns.ts';

/** The same value with every object's keys inserted in reverse order. */
function reversed(value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(reversed);
  const out = Object.create(null) as Record<string, unknown>;
  for (const key of Object.keys(value).reverse()) out[key] = reversed((value as Record<string, unknown>)[key]);
  return out;
}

describe('compareCanonicalKeys', () => {
  it('orders ASCII keys as jsonb does: shorter first, then bytewise; a key against itself is neither', () => {
    expect(compareCanonicalKeys('a', 'b')).toBeLessThan(0);
    expect(compareCanonicalKeys('b', 'a')).toBeGreaterThan(0);
    expect(compareCanonicalKeys('b', 'ab')).toBeLessThan(0);
    expect(compareCanonicalKeys('ab', 'b')).toBeGreaterThan(0);
    expect(compareCanonicalKeys('key', 'key')).toBe(0);
  });

  it('orders other keys by UTF-8 length before their bytes, and keys of one UTF-8 length bytewise', () => {
    // "é" is two bytes (c3 a9), "aaa" three (61 61 61): "é" comes first although its first byte is greater.
    expect(compareCanonicalKeys('é', 'aaa')).toBeLessThan(0);
    expect(compareCanonicalKeys('aaa', 'é')).toBeGreaterThan(0);
    // "ä" (c3 a4), "é" (c3 a9) and "zz" (7a 7a) are all two bytes.
    expect(compareCanonicalKeys('é', 'ä')).toBeGreaterThan(0);
    expect(compareCanonicalKeys('ä', 'é')).toBeLessThan(0);
    expect(compareCanonicalKeys('zz', 'é')).toBeLessThan(0);
    expect(compareCanonicalKeys('é', 'é')).toBe(0);
  });
});

describe('canonicalJson', () => {
  it('orders two keys, keys of equal UTF-8 length, and index-like keys at any depth', () => {
    expect(canonicalJson({ b: 1, a: 2 })).toBe('{"a":2,"b":1}');
    expect(canonicalJson({ é: 1, aaa: 2, ä: 3, zz: 4 })).toBe('{"zz":4,"ä":3,"é":1,"aaa":2}');
    expect(canonicalJson({ list: [{ 10: 1, b: 2, 9: 3 }, null, { 0: [] }] })).toBe('{"list":[{"9":3,"b":2,"10":1},null,{"0":[]}]}');
  });

  it('keeps a "__proto__" key (as JSON.parse makes it) as a key, at the top and at depth', () => {
    expect(canonicalJson(JSON.parse('{"b":1,"__proto__":2}'))).toBe('{"b":1,"__proto__":2}');
    expect(canonicalJson(JSON.parse('{"z":{"b":1,"__proto__":{"y":1,"x":2}},"a":[{"__proto__":null,"b":0}]}'))).toBe(
      '{"a":[{"b":0,"__proto__":null}],"z":{"b":1,"__proto__":{"x":2,"y":1}}}',
    );
  });

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

/** canonicalJson(value), with the values JSON.stringify was called with meanwhile. */
function stringifiedWhile(value: unknown): { text: string; stringified: unknown[] } {
  const stringify = vi.spyOn(JSON, 'stringify');
  const text = canonicalJson(value);
  const stringified = stringify.mock.calls.map(([argument]) => argument as unknown);
  stringify.mockRestore();
  return { text, stringified };
}

describe("canonicalJson's cost", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('stringifies a value already in canonical order, as jsonb gives it back, once and as it is', () => {
    const value: unknown = JSON.parse('{"a":[1,{"x":null,"yy":"é"}],"b":{"c":true},"ab":{},"zz":[],"é":0,"aaa":"v"}');
    const { text, stringified } = stringifiedWhile(value);
    expect(text).toBe('{"a":[1,{"x":null,"yy":"é"}],"b":{"c":true},"ab":{},"zz":[],"é":0,"aaa":"v"}');
    expect(stringified).toHaveLength(1);
    expect(stringified[0]).toBe(value);
  });

  it('stringifies a value out of order, as a producer sends it, once: an ordered copy', () => {
    const value: unknown = JSON.parse('{"b":[{"y":1,"x":null},null,2],"a":{"é":true,"zz":"s"}}');
    const { text, stringified } = stringifiedWhile(value);
    expect(text).toBe('{"a":{"zz":"s","é":true},"b":[{"x":null,"y":1},null,2]}');
    expect(stringified).toHaveLength(1);
    expect(stringified[0]).not.toBe(value);
  });
});

/** Two rows as a chain stores them; their links below were computed before the writer's linker was rewritten (issue 44). */
const CREATED_AT = '2026-11-27T06:45:00.123456Z';
const ROW_A: ChainedRowContent = {
  seq: 1, id: 41, userId: 1, agentId: 'agent-α', tool: 'query', sector: 'finance', decision: 'allow', denyReason: null,
  args: { where: [{ op: 'gte', field: 'posted_on', value: '2026-01-01' }], limit: 50, note: 'tab\there "quoted" \\ 😀' },
  resultCount: 3, outcome: 'ok', requestId: 'req-1', createdAt: CREATED_AT,
};
const ROW_B: ChainedRowContent = {
  seq: 2, id: 42, userId: 7, agentId: null, tool: 'ingest', sector: null, decision: 'deny', denyReason: "sector 'mail' is not granted\n",
  args: {}, resultCount: 0, outcome: 'error', requestId: 'req-2', createdAt: CREATED_AT,
};
const CHAIN_KEY = Buffer.from('000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f', 'hex');
const GENESIS = '0'.repeat(64);
const KEYED = ['f49c45af9884a511344fb9d6b99706ecbb64ffbfe9e65a49dfbec939d86b7970', '4abd38450cc6d2622a87c752f390532523952a62fcd6d7ad0caccaa55543eafe'];
const UNKEYED = ['4331102a35a335fb63bcb2b84864144d4e421bb78183d3d3d08d959450800e3c', '8a77cc09e2e2b775c9fee975ba6618948c768bc084d09d8dc79697bf29f61d6c'];

describe('the canonical row text and the links stored chains hold', () => {
  it('keeps the canonical text of a row: its scalars as one JSON array, a newline, its canonical args', () => {
    expect(canonicalRowText(ROW_A, 2)).toBe(
      '[2,1,41,1,"agent-α","query","finance","allow",null,3,"ok","req-1","2026-11-27T06:45:00.123456Z"]\n' +
        '{"note":"tab\\there \\"quoted\\" \\\\ 😀","limit":50,"where":[{"op":"gte","field":"posted_on","value":"2026-01-01"}]}',
    );
  });

  it('writes the numbers of the scalar array as JSON.stringify does, a non-finite one as null', () => {
    expect(canonicalRowText({ ...ROW_B, seq: Number.NaN, id: Number.POSITIVE_INFINITY }, 2)).toBe(
      '[2,null,null,7,null,"ingest",null,"deny","sector \'mail\' is not granted\\n",0,"error","req-2","2026-11-27T06:45:00.123456Z"]\n{}',
    );
  });

  it('links with the chain key when the writer holds it, else unkeyed', () => {
    expect(chainLink(CHAIN_KEY, GENESIS, ROW_A)).toBe(KEYED[0]);
    expect(chainLink(null, GENESIS, ROW_A)).toBe(UNKEYED[0]);
  });

  it('keeps the keyed and unkeyed links of rows already stored, whether verify or the writer computes them', () => {
    expect(keyedChainHash(CHAIN_KEY, GENESIS, ROW_A)).toBe(KEYED[0]);
    expect(keyedChainHash(CHAIN_KEY, KEYED[0]!, ROW_B)).toBe(KEYED[1]);
    expect(chainHash(GENESIS, ROW_A)).toBe(UNKEYED[0]);
    expect(chainHash(UNKEYED[0]!, ROW_B)).toBe(UNKEYED[1]);
    for (const [key, links] of [[CHAIN_KEY, KEYED], [null, UNKEYED]] as const) {
      const link = createChainLinker(key, CREATED_AT);
      const first = link(GENESIS, { seq: 1, id: 41, scalarsJson: rowScalarsJson(ROW_A) }, canonicalJson(ROW_A.args));
      expect(first).toBe(links[0]);
      expect(link(first, { seq: 2, id: 42, scalarsJson: rowScalarsJson(ROW_B) }, canonicalJson(ROW_B.args))).toBe(links[1]);
    }
  });

  it("gives the writer's linker the links verify computes, for any row, over the scalars' one JSON array", () => {
    const text = fc.oneof(fc.string({ unit: 'binary' }), fc.string());
    const row = fc.record({
      seq: fc.integer({ min: 1, max: 2 ** 40 }), id: fc.integer({ min: 1, max: 2 ** 40 }), userId: fc.integer({ min: 1, max: 2 ** 31 }),
      agentId: fc.option(text), tool: text, sector: fc.option(text), decision: fc.constantFrom('allow', 'deny'), denyReason: fc.option(text),
      args: fc.jsonValue({ maxDepth: 3 }), resultCount: fc.integer({ min: 0, max: 2 ** 31 - 1 }), outcome: fc.constantFrom('ok', 'error'), requestId: text,
      createdAt: fc.constant(CREATED_AT),
    });
    fc.assert(
      fc.property(row, fc.stringMatching(/^[0-9a-f]{64}$/), (content, previous) => {
        const { seq, id, userId, agentId, tool, sector, decision, denyReason, resultCount, outcome, requestId, createdAt } = content;
        const scalars = JSON.stringify([2, seq, id, userId, agentId, tool, sector, decision, denyReason, resultCount, outcome, requestId, createdAt]);
        expect(canonicalRowText(content, 2)).toBe(`${scalars}\n${canonicalJson(content.args)}`);
        const linked = { seq, id, scalarsJson: rowScalarsJson(content) };
        expect(createChainLinker(CHAIN_KEY, CREATED_AT)(previous, linked, canonicalJson(content.args))).toBe(keyedChainHash(CHAIN_KEY, previous, content));
        expect(createChainLinker(null, CREATED_AT)(previous, linked, canonicalJson(content.args))).toBe(chainHash(previous, content));
      }),
      { numRuns: 100, seed: 44 },
    );
  });
});
