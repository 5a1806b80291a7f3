import { describe, expect, it } from 'vitest';
import { SECTORS } from '../sectors/index.ts';
import { agentStatus, deadlineFromDays, grantIsLive, resolveSectors } from './grants-fns.ts';

describe('sector resolution (spec 2.2)', () => {
  it.each([
    ['an empty list', [], []],
    ['known names, in the fixed order', ['home', 'finance'], ['finance', 'home']],
    ['unknown names dropped silently', ['finance', 'bank', 'Finance', ''], ['finance']],
    ['only unknown names', ['bank', 'email'], []],
    ['duplicates once', ['mail', 'mail'], ['mail']],
    ['a wildcard as all six', ['*'], [...SECTORS]],
    ['a wildcard beside other names as all six', ['mail', '*', 'bank'], [...SECTORS]],
  ])('resolves %s', (_label, stored, expected) => {
    expect(resolveSectors(stored)).toEqual(expected);
  });
});

describe('deadlines (spec 3.1)', () => {
  const deadline = '2030-01-01T00:00:00.000Z';

  it('keeps a key live until its expiry instant and dead from that instant on', () => {
    expect(grantIsLive({ expiresAt: deadline }, new Date('2029-12-31T23:59:59.999Z'))).toBe(true);
    expect(grantIsLive({ expiresAt: deadline }, new Date(deadline))).toBe(false);
    expect(grantIsLive({ expiresAt: deadline }, new Date('2030-01-01T00:00:00.001Z'))).toBe(false);
  });

  it('never ends a key without a deadline', () => {
    expect(grantIsLive({ expiresAt: null }, new Date('9999-01-01T00:00:00.000Z'))).toBe(true);
  });

  it('names a revoked key revoked even past its deadline', () => {
    const now = new Date('2031-01-01T00:00:00.000Z');
    expect(agentStatus({ revokedAt: '2029-01-01T00:00:00.000Z', expiresAt: deadline }, now)).toBe('revoked');
    expect(agentStatus({ revokedAt: null, expiresAt: deadline }, now)).toBe('expired');
    expect(agentStatus({ revokedAt: null, expiresAt: null }, now)).toBe('active');
  });

  it('counts a deadline in whole days from now, or none', () => {
    const now = new Date('2026-03-01T10:00:00.000Z');
    expect(deadlineFromDays(30, now)).toBe('2026-03-31T10:00:00.000Z');
    expect(deadlineFromDays(null, now)).toBeNull();
    expect(deadlineFromDays(undefined, now)).toBeNull();
  });
});
