import { describe, expect, it } from 'vitest';
import { dayAfter, localDate, looksRelative, resolveRelativeDate } from './query-dates.ts';

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

  it('takes N up to ten years (3660 days), the first and the last day included', () => {
    expect(range('last_3660_days', AT, 'UTC')).toEqual(['2016-02-23', '2026-03-01']);
    expect(range('next_3660_days', AT, 'UTC')).toEqual(['2026-03-01', '2036-03-07']);
    expect(range('last_3661_days', AT, 'UTC')).toBe('last_3661_days: N is from 1 to 3660');
  });

  it('names every relative value when one is unknown', () => {
    const unknown = `is not a relative date; use today, yesterday, tomorrow, this_week, last_week, next_week, this_month, last_month, next_month, this_year, last_year, last_N_days, next_N_days (N a whole number of days)`;
    expect(range('someday', AT, 'UTC')).toBe(`'someday' ${unknown}`);
    expect(range('last_12345_days', AT, 'UTC')).toBe(`'last_12345_days' ${unknown}`);
    expect(range('last_x_days', AT, 'UTC')).toBe(`'last_x_days' ${unknown}`);
  });

  it('writes the years before 1000 with four digits', () => {
    expect(range('last_year', '1000-06-15T12:00:00Z', 'UTC')).toEqual(['0999-01-01', '0999-12-31']);
  });
});

describe('what reads as a relative date', () => {
  it.each([['today'], ['last_year'], ['last_5_days'], ['next_1234_days'], ['last_0_days'], ['last_9999_days']])('%j does', (value) => {
    expect(looksRelative(value)).toBe(true);
  });

  it.each([['someday'], ['last_12345_days'], ['last__days'], ['last_x_days'], ['xlast_5_days'], ['last_5_days_ago'], ['2026-03-01'], [5], [null], [['last_5_days']]])('%j does not', (value) => {
    expect(looksRelative(value)).toBe(false);
  });
});

describe('the day after a date', () => {
  it.each([
    ['2026-02-28', '2026-03-01'],
    ['2028-02-28', '2028-02-29'],
    ['2026-12-31', '2027-01-01'],
    ['2026-03-29', '2026-03-30'],
  ])('after %s comes %s, whatever the clocks do', (date, next) => {
    expect(dayAfter(date)).toBe(next);
  });
});
