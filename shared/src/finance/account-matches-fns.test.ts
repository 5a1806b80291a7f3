import { describe, expect, it } from 'vitest';
import { candidatePairs, lastFourOf, normalDomain, type MatchableAccount } from './account-matches-fns.ts';

const account = (connectionRank: number, sourceId: string, institutionDomain: string | null, name: string | null, mask: string | null = null): MatchableAccount => ({
  connectionId: `c${connectionRank}`,
  sourceId,
  connectionRank,
  institutionDomain,
  name,
  mask,
});

describe('the last 4 digits of an account', () => {
  it('reads the mask, or the last 4 digits the name ends with, or nothing', () => {
    expect(lastFourOf({ mask: '4821', name: 'Checking' })).toBe('4821');
    expect(lastFourOf({ mask: null, name: 'Total Checking ••4821' })).toBe('4821');
    expect(lastFourOf({ mask: null, name: 'Visa (x1234)' })).toBe('1234');
    expect(lastFourOf({ mask: null, name: 'Online Savings' })).toBeNull();
    expect(lastFourOf({ mask: null, name: 'Card 123' })).toBeNull();
    expect(lastFourOf({ mask: null, name: null })).toBeNull();
  });

  it('compares institution domains without case, a www. prefix or spaces', () => {
    expect(normalDomain(' WWW.Chase.com ')).toBe('chase.com');
    expect(normalDomain('')).toBeNull();
    expect(normalDomain(null)).toBeNull();
  });
});

describe('pairs of accounts that may be the same', () => {
  it('merges when both report the same last 4, asks when either has none, and skips different last 4', () => {
    const pairs = candidatePairs([
      account(2, 'b-chk', 'chase.com', 'CHK 4821'),
      account(1, 'a-chk', 'www.chase.com', 'Checking', '4821'),
      account(1, 'a-sav', 'ally.com', 'Savings'),
      account(2, 'b-sav', 'ally.com', 'Savings ••7788'),
      account(1, 'a-mtg', 'wellsfargo.com', 'Mortgage ••2222'),
      account(2, 'b-mtg', 'wellsfargo.com', 'Mortgage ••3333'),
    ]);
    expect(pairs).toEqual(
      expect.arrayContaining([
        { first: { connectionId: 'c1', sourceId: 'a-chk' }, second: { connectionId: 'c2', sourceId: 'b-chk' }, institutionDomain: 'chase.com', automatic: true },
        { first: { connectionId: 'c1', sourceId: 'a-sav' }, second: { connectionId: 'c2', sourceId: 'b-sav' }, institutionDomain: 'ally.com', automatic: false },
      ]),
    );
    expect(pairs).toHaveLength(2);
  });

  it('never pairs two accounts of one connection, nor accounts without a domain', () => {
    expect(candidatePairs([account(1, 'x', 'chase.com', 'Checking'), account(1, 'y', 'chase.com', 'Savings')])).toEqual([]);
    expect(candidatePairs([account(1, 'x', null, 'Checking 1234'), account(2, 'y', null, 'Checking 1234')])).toEqual([]);
  });

  it('puts the earlier connection first whatever the input order', () => {
    const [pair] = candidatePairs([account(3, 'late', 'ally.com', 'Savings'), account(1, 'early', 'ally.com', 'Savings')]);
    expect(pair?.first.sourceId).toBe('early');
  });
});
