import { describe, expect, it } from 'vitest';
import { limitLowered, QueryInputSchema } from './query-input.ts';

// The query tool's input (issue 34): a page holds 1 to 200 rows, 50 unless told; a larger limit is lowered to
// 200, never refused, and the page says so.
const parse = (input: Record<string, unknown>) => QueryInputSchema.parse({ object: 'finance.transaction', ...input });

describe('limit', () => {
  it('is 50 rows unless told', () => {
    expect(parse({}).limit).toBe(50);
  });

  it.each([1, 7, 199, 200])('keeps %i', (limit) => {
    expect(parse({ limit }).limit).toBe(limit);
  });

  it.each([201, 1000, 1_000_000])('lowers %i to 200', (limit) => {
    expect(parse({ limit }).limit).toBe(200);
  });

  it.each([0, -1, 2.5])('refuses %d', (limit) => {
    expect(QueryInputSchema.safeParse({ object: 'finance.transaction', limit }).success).toBe(false);
  });
});

describe('the notice of a lowered limit', () => {
  it('says what was asked, what was served, and how to get the rest', () => {
    expect(limitLowered({ object: 'finance.transaction', limit: 201 })).toEqual({
      limit_lowered_to: 200,
      limit_notice: 'limit 201 is above the maximum of 200, so it was lowered to 200; has_more: true and next_cursor give the rest.',
    });
  });

  it.each([
    ['a limit of 200', { limit: 200 }],
    ['a limit under 200', { limit: 3 }],
    ['no limit', {}],
    ['a limit that is not a number', { limit: '1000' }],
    ['a limit that is not whole', { limit: 1000.5 }],
    ['no input', null],
    ['input that is not an object', 'limit'],
  ])('is absent for %s', (_label, input) => {
    expect(limitLowered(input)).toEqual({});
  });
});
