import { describe, expect, it } from 'vitest';
import { catalogueObject } from '@pcg/testkit/testing';
import { QueryInputSchema } from './query-input.ts';
import { planQuery, type AggregatePlan } from './query-plan.ts';
import { decimalMinus, pageTwinNotes, twinField, withoutTwins } from './query-twins.ts';

// Design 8.3: an undecided account match hides nothing; rows of both copies carry possible_twin_id, a result
// holding both rows of a pair has a top-level notes entry saying so, and an aggregate gives each count and sum
// also as <metric>_without_possible_twins (finance's notes). Every expected value below is written by hand.
const object = catalogueObject;
const transactions = object('finance.transaction');
const accounts = object('finance.account');

const aggregateOf = (aggregate: Record<string, unknown>, on = transactions): AggregatePlan => {
  const plan = planQuery(on, QueryInputSchema.parse({ object: on.name, aggregate }));
  if (!plan.aggregate) throw new Error('no aggregate planned');
  return plan.aggregate;
};

describe('the field a page reads to find pairs', () => {
  it('is possible_twin_id on the objects that have twins', () => {
    expect(twinField(transactions)?.name).toBe('possible_twin_id');
    expect(twinField(accounts)?.name).toBe('possible_twin_id');
  });

  it('is none on objects without twins', () => {
    expect(twinField(object('mail.message'))).toBeUndefined();
    expect(twinField(object('finance.holding'))).toBeUndefined();
  });
});

describe('the note of a page holding both rows of a pair', () => {
  it('names the one pair once, whichever row comes first, and says what to count', () => {
    const rows = [
      { id: 'b2', possible_twin_id: 'a1' },
      { id: 'c3', possible_twin_id: null },
      { id: 'a1', possible_twin_id: 'b2' },
    ];
    expect(pageTwinNotes(transactions, rows)).toEqual([
      "This result holds both rows of a pair that may be the same transaction reported by two connections whose accounts await the operator's answer (possible_twin_id): a1 and b2. Count one transaction of each pair unless you know they differ.",
    ]);
  });

  it('counts several pairs and names each, and calls an account an account', () => {
    const rows = [
      { id: 'a1', possible_twin_id: 'b2' },
      { id: 'b2', possible_twin_id: 'a1' },
      { id: 'c3', possible_twin_id: 'd4' },
      { id: 'd4', possible_twin_id: 'c3' },
    ];
    const [note] = pageTwinNotes(accounts, rows);
    expect(note).toContain('both rows of 2 pairs that may be the same account reported by two connections');
    expect(note).toContain('(possible_twin_id): a1 and b2; c3 and d4. Count one account of each pair');
  });

  it('says nothing when the page holds one row of a pair, or no pair', () => {
    expect(pageTwinNotes(transactions, [{ id: 'a1', possible_twin_id: 'b2' }, { id: 'c3', possible_twin_id: null }])).toEqual([]);
    expect(pageTwinNotes(transactions, [{ id: 'a1', possible_twin_id: null }])).toEqual([]);
    expect(pageTwinNotes(transactions, [])).toEqual([]);
  });
});

describe('the exact difference of two decimals', () => {
  it.each([
    ['-144.99', '-60.00', '-84.99'],
    ['-60.00', '-60.00', '0.00'],
    ['10', '2.5', '7.5'],
    ['2.5', '10', '-7.5'],
    ['0.05', '0.1', '-0.05'],
    ['1.005', '-0.995', '2.000'],
    ['+3.25', '1', '2.25'],
    ['-0.5', '-1.25', '0.75'],
    ['1000', '1', '999'],
    ['.5', '0', '0.5'],
    ['12345678901234567890.12', '0.01', '12345678901234567890.11'],
  ])('%s minus %s is %s', (a, b, difference) => {
    expect(decimalMinus(a, b)).toBe(difference);
  });

  it('takes counts as numbers', () => {
    expect(decimalMinus(4, 1)).toBe('3');
    expect(decimalMinus(1, 1)).toBe('0');
    expect(decimalMinus(0, 2)).toBe('-2');
  });

  it('is null with no first value, and the first value with no second', () => {
    expect(decimalMinus(null, '1.00')).toBeNull();
    expect(decimalMinus(undefined, '1.00')).toBeNull();
    expect(decimalMinus('-3.50', null)).toBe('-3.50');
    expect(decimalMinus(7, undefined)).toBe('7');
  });
});

describe('aggregate totals without the later copy of each pair', () => {
  const byDay = aggregateOf({ group_by: ['posted_on'], metrics: [{ fn: 'sum', field: 'amount' }, { fn: 'count' }, { fn: 'max', field: 'amount' }] });

  it('leaves the groups as they are, with no note, when no group holds a pair', () => {
    const groups = [{ posted_on: '2026-11-03', sum_amount: '-60.00', count: 1, max_amount: '-60.00' }];
    const result = withoutTwins(transactions, byDay, groups, []);
    expect(result).toEqual({ rows: groups, notes: [] });
    expect(result.rows).not.toBe(groups);
  });

  it('subtracts in each group what its later copies add, keeps a count a number and a sum exact text, and says so', () => {
    const groups = [
      { posted_on: '2026-11-03', sum_amount: '-80.00', count: 3, max_amount: '-5.00' },
      { posted_on: '2026-11-04', sum_amount: '-15.00', count: 1, max_amount: '-15.00' },
      { posted_on: null, sum_amount: '-9.50', count: 2, max_amount: '-4.50' },
    ];
    const twinRows = [
      { posted_on: '2026-11-03', sum_amount: '-60.00', count: '1' },
      { posted_on: null, sum_amount: '-4.50', count: '1' },
    ];
    const result = withoutTwins(transactions, byDay, groups, twinRows);
    expect(result.rows).toStrictEqual([
      { posted_on: '2026-11-03', sum_amount: '-80.00', count: 3, max_amount: '-5.00', sum_amount_without_possible_twins: '-20.00', count_without_possible_twins: 2 },
      { posted_on: '2026-11-04', sum_amount: '-15.00', count: 1, max_amount: '-15.00', sum_amount_without_possible_twins: '-15.00', count_without_possible_twins: 1 },
      { posted_on: null, sum_amount: '-9.50', count: 2, max_amount: '-4.50', sum_amount_without_possible_twins: '-5.00', count_without_possible_twins: 1 },
    ]);
    expect(result.notes).toEqual([
      "Some groups hold both rows of a pair that may be the same transaction reported by two connections whose accounts await the operator's answer (possible_twin_id). sum_amount_without_possible_twins, count_without_possible_twins give each group's total with the later connection's copy of each pair left out; use them unless you know the two differ.",
    ]);
  });

  it('keeps a sum with no value null without and with twins', () => {
    const total = aggregateOf({ metrics: [{ fn: 'sum', field: 'amount' }] });
    expect(withoutTwins(transactions, total, [{ sum_amount: null }], [{ sum_amount: '-1.00' }]).rows).toStrictEqual([{ sum_amount: null, sum_amount_without_possible_twins: null }]);
  });

  it('matches groups of several fields on every field', () => {
    const twoFields = aggregateOf({ group_by: ['category', 'posted_on'], metrics: [{ fn: 'count' }] });
    const groups = [
      { category: 'dining', posted_on: '2026-11-03', count: 2 },
      { category: 'groceries', posted_on: '2026-11-03', count: 2 },
    ];
    const result = withoutTwins(transactions, twoFields, groups, [{ category: 'groceries', posted_on: '2026-11-03', count: '1' }]);
    expect(result.rows.map((row) => row.count_without_possible_twins)).toEqual([2, 1]);
  });

  it('names no output when no metric is a count or sum, and says to ask for one', () => {
    const highest = aggregateOf({ group_by: ['type'], metrics: [{ fn: 'max', field: 'balance_current' }] }, accounts);
    const result = withoutTwins(accounts, highest, [{ type: 'credit', max_balance_current: '500.00' }], [{ type: 'credit' }]);
    expect(result.rows).toStrictEqual([{ type: 'credit', max_balance_current: '500.00' }]);
    expect(result.notes).toEqual([
      "Some groups hold both rows of a pair that may be the same account reported by two connections whose accounts await the operator's answer (possible_twin_id). Counts and sums give each group's total with the later connection's copy of each pair left out; use a count or sum unless you know the two differ.",
    ]);
  });
});
