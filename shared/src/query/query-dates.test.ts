import { describe, expect, it } from 'vitest';
import { localDate, resolveRelativeDate } from './query-dates.ts';

// Issue 20: relative dates resolved in the person's time zone; weeks start on Monday; last_N_days
// includes today.
const range = (value: string, at: string, zone: string) => {
  const resolved = resolveRelativeDate(value, new Date(at), zone);
  return typeof resolved === 'string' ? resolved : [resolved.from, resolved.to];
};

describe('relative dates', () => {
  // 2026-03-01T02:30Z is Sunday 1 March in Berlin but still Saturday 28 February in New York.
  const AT = '2026-03-01T02:30:00Z';

  it('takes today from the person\'s zone, not UTC', () => {
    expect(localDate(new Date(AT), 'Europe/Berlin')).toBe('2026-03-01');
    expect(localDate(new Date(AT), 'America/New_York')).toBe('2026-02-28');
    expect(range('today', AT, 'America/New_York')).toEqual(['2026-02-28', '2026-02-28']);
    expect(range('yesterday', AT, 'Europe/Berlin')).toEqual(['2026-02-28', '2026-02-28']);
    expect(range('tomorrow', AT, 'America/New_York')).toEqual(['2026-03-01', '2026-03-01']);
  });

  it('starts weeks on Monday, including when today is a Sunday', () => {
    expect(range('this_week', AT, 'Europe/Berlin')).toEqual(['2026-02-23', '2026-03-01']);
    expect(range('last_week', AT, 'Europe/Berlin')).toEqual(['2026-02-16', '2026-02-22']);
    expect(range('next_week', AT, 'Europe/Berlin')).toEqual(['2026-03-02', '2026-03-08']);
    expect(range('this_week', '2026-03-02T12:00:00Z', 'UTC')).toEqual(['2026-03-02', '2026-03-08']);
  });

  it('gives whole months and years, across a year end and a leap day', () => {
    expect(range('this_month', AT, 'America/New_York')).toEqual(['2026-02-01', '2026-02-28']);
    expect(range('last_month', AT, 'Europe/Berlin')).toEqual(['2026-02-01', '2026-02-28']);
    expect(range('last_month', '2028-03-10T00:00:00Z', 'UTC')).toEqual(['2028-02-01', '2028-02-29']);
    expect(range('last_month', '2026-01-15T00:00:00Z', 'UTC')).toEqual(['2025-12-01', '2025-12-31']);
    expect(range('next_month', '2026-12-15T00:00:00Z', 'UTC')).toEqual(['2027-01-01', '2027-01-31']);
    expect(range('this_year', AT, 'UTC')).toEqual(['2026-01-01', '2026-12-31']);
    expect(range('last_year', AT, 'UTC')).toEqual(['2025-01-01', '2025-12-31']);
  });

  it('counts last_N_days and next_N_days with today included', () => {
    expect(range('last_1_days', AT, 'Europe/Berlin')).toEqual(['2026-03-01', '2026-03-01']);
    expect(range('last_30_days', AT, 'Europe/Berlin')).toEqual(['2026-01-31', '2026-03-01']);
    expect(range('next_7_days', AT, 'Europe/Berlin')).toEqual(['2026-03-01', '2026-03-07']);
  });

  it('refuses what it cannot resolve, naming what is valid', () => {
    expect(range('last_0_days', AT, 'UTC')).toBe('last_0_days: N is from 1 to 3660');
    expect(range('last_9999_days', AT, 'UTC')).toBe('last_9999_days: N is from 1 to 3660');
  });
});
