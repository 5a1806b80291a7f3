import { describe, expect, it } from 'vitest';
import { findUnstorableText, PG_VALUE_RULES, PgDateSchema, PgInstantSchema, PgIntegerSchema, PgJsonSchema, PgTextSchema, pgTextProblem } from './pg-values.ts';

describe('text Postgres can hold', () => {
  it.each([['fin\u0000ance'], ['\u0000'], ['\ud800'], ['a\udc00b'], ['\ud800\ud800']])('refuses %j', (value) => {
    expect(pgTextProblem(value)).toBe(PG_VALUE_RULES.text);
    expect(PgTextSchema.safeParse(value).success).toBe(false);
  });

  it.each([[''], ['finance'], ['😀 ü ß'], ['\ud83d\ude00']])('accepts %j', (value) => {
    expect(PgTextSchema.parse(value)).toBe(value);
  });

  it('names the path of the first bad string inside JSON, keys included', () => {
    expect(findUnstorableText({ a: [{ b: 'ok' }, { c: 'x\u0000' }] })).toBe('a[1].c');
    expect(findUnstorableText({ ['k\ud800']: 1 })).toBe('k\ud800');
    expect(findUnstorableText({ a: ['fine'], n: 1, z: null })).toBeNull();
    expect(PgJsonSchema.safeParse({ deep: { list: ['\u0000'] } }).error?.issues[0]?.message).toBe(`'deep.list[0]' ${PG_VALUE_RULES.text}`);
  });
});

describe('instants and dates Postgres can hold', () => {
  it.each([['0000-01-01T00:00:00Z'], [1e15], ['+010000-01-01T00:00:00Z'], ['-000001-01-01T00:00:00Z'], ['275760-09-13T00:00:00Z'], ['0001-01-01T00:00:00+01:00'], ['soon']])(
    'refuses the instant %j',
    (value) => {
      expect(PgInstantSchema.safeParse(value).error?.issues[0]?.message).toBe(PG_VALUE_RULES.instant);
    },
  );

  it('accepts the ends of the range and normalises to UTC', () => {
    expect(PgInstantSchema.parse('0001-01-01T00:00:00Z')).toBe('0001-01-01T00:00:00.000Z');
    expect(PgInstantSchema.parse('9999-12-31T23:59:59.999Z')).toBe('9999-12-31T23:59:59.999Z');
    expect(PgInstantSchema.parse('2026-03-01T08:00:00+08:00')).toBe('2026-03-01T00:00:00.000Z');
  });

  it.each([['0000-01-01'], ['2026-02-30'], ['2026-04-31'], ['10000-01-01']])('refuses the date %s', (value) => {
    expect(PgDateSchema.safeParse(value).success).toBe(false);
  });

  it('holds integers to the integer column', () => {
    expect(PgIntegerSchema.safeParse(2147483648).success).toBe(false);
    expect(PgIntegerSchema.parse(-2147483648)).toBe(-2147483648);
  });
});
