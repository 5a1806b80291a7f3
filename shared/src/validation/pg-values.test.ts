import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  findUnstorableText,
  isPgInstantMs,
  PG_VALUE_RULES,
  PgDateSchema,
  PgInstantSchema,
  PgIntegerSchema,
  PgJsonSchema,
  pgText,
  PgTextSchema,
  pgTextProblem,
} from './pg-values.ts';

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
  it.each([['0000-01-01T00:00:00Z'], [1e15], ['+010000-01-01T00:00:00Z'], ['-000001-01-01T00:00:00Z'], ['275760-09-13T00:00:00Z'], ['0001-01-01T00:00:00+01:00'], ['soon'], [new Date('soon')], [true], [null]])(
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

describe('the path of an unstorable string', () => {
  it('names a bad string at the top as the value itself, and in the schema by the rule alone', () => {
    expect(findUnstorableText('x\u0000')).toBe('(value)');
    expect(findUnstorableText('fine')).toBeNull();
    expect(PgJsonSchema.safeParse('\ud800').error?.issues[0]?.message).toBe(PG_VALUE_RULES.text);
  });

  it('names list items by index and nested keys by dots, from the first bad one', () => {
    expect(findUnstorableText(['ok', 'x\u0000'])).toBe('[1]');
    expect(findUnstorableText({ top: 'bad\u0000', later: '\u0000' })).toBe('top');
    expect(findUnstorableText({ a: { b: { ['c\u0000']: 1 } } })).toBe('a.b.c\u0000');
    expect(findUnstorableText([{ a: 'ok' }, [1, '\ud800']])).toBe('[1][1]');
  });

  it('reads each object once, so a cycle ends', () => {
    const cycle: Record<string, unknown> = { name: 'ok' };
    cycle.self = cycle;
    expect(findUnstorableText(cycle)).toBeNull();
    cycle.bad = '\u0000';
    expect(findUnstorableText(cycle)).toBe('bad');
  });

  it('passes over values that hold no text, undefined included', () => {
    expect(findUnstorableText(undefined)).toBeNull();
    expect(findUnstorableText({ gone: undefined, count: 1, done: true, list: [undefined, 2] })).toBeNull();
  });

  it('reports a refusal as a custom zod issue at the value', () => {
    expect(PgJsonSchema.safeParse({ a: '\u0000' }).error?.issues[0]).toMatchObject({ code: 'custom', path: [] });
    expect(PgInstantSchema.safeParse('0000-01-01T00:00:00Z').error?.issues[0]).toMatchObject({ code: 'custom', path: [] });
  });

  it('lets JSON Postgres can hold through unchanged', () => {
    const json = { list: ['😀', 1, null, true], nested: { key: 'value' } };
    expect(PgJsonSchema.parse(json)).toEqual(json);
  });

  it('keeps a schema\'s own rules and takes a message of its own', () => {
    const named = pgText(z.string().max(3), 'no NUL here');
    expect(named.safeParse('abcd').success).toBe(false);
    expect(named.safeParse('a\u0000').error?.issues[0]?.message).toBe('no NUL here');
    expect(pgText(z.string()).safeParse('\u0000').error?.issues[0]?.message).toBe(PG_VALUE_RULES.text);
  });
});

describe('the ends of the instant range', () => {
  it('holds 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999Z, both included', () => {
    const start = new Date('0001-01-01T00:00:00.000Z').getTime();
    const end = new Date('9999-12-31T23:59:59.999Z').getTime();
    expect(isPgInstantMs(start)).toBe(true);
    expect(isPgInstantMs(start - 1)).toBe(false);
    expect(isPgInstantMs(end)).toBe(true);
    expect(isPgInstantMs(end + 1)).toBe(false);
    expect(isPgInstantMs(Number.NaN)).toBe(false);
    expect(isPgInstantMs(Number.POSITIVE_INFINITY)).toBe(false);
  });

  it('takes a Date and epoch milliseconds as well as text', () => {
    expect(PgInstantSchema.parse(new Date('2026-03-01T08:00:00+08:00'))).toBe('2026-03-01T00:00:00.000Z');
    expect(PgInstantSchema.parse(Date.UTC(2026, 2, 1))).toBe('2026-03-01T00:00:00.000Z');
    expect(PgInstantSchema.safeParse(new Date(Number.NaN)).success).toBe(false);
    expect(PgInstantSchema.safeParse(new Date(Date.UTC(10000, 0, 1))).error?.issues[0]?.message).toBe(PG_VALUE_RULES.instant);
  });
});

describe('dates and integers Postgres can hold', () => {
  it.each([['0001-01-01'], ['9999-12-31'], ['2028-02-29']])('accepts the date %s', (value) => {
    expect(PgDateSchema.parse(value)).toBe(value);
  });

  it('refuses a date with the rule as its message', () => {
    expect(PgDateSchema.safeParse('0000-12-31').error?.issues[0]?.message).toBe(PG_VALUE_RULES.date);
    expect(PgDateSchema.safeParse('2026-02-30').error?.issues[0]?.message).toBe(PG_VALUE_RULES.date);
  });

  it('holds whole numbers from -2147483648 to 2147483647, with the rule as the message', () => {
    expect(PgIntegerSchema.parse(2147483647)).toBe(2147483647);
    for (const value of [-2147483649, 2147483648, 1.5, '1']) {
      expect(PgIntegerSchema.safeParse(value).error?.issues[0]?.message).toBe(PG_VALUE_RULES.integer);
    }
  });
});
