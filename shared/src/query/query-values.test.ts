import { describe, expect, it } from 'vitest';
import { calendarDate, isoInstant, isStorableText } from './query-values.ts';

// Dates and instants in a query's `where` are read by one strict grammar before they reach Postgres: a real
// calendar day in years 0001-9999, and for instants an optional time and offset that Postgres reads exactly.
describe('calendar dates in a query', () => {
  it.each([['2026-02-28'], ['2028-02-29'], ['0001-01-01'], ['9999-12-31'], ['2026-12-31'], ['2026-01-31'], ['2026-04-30'], ['0004-02-29']])(
    'keeps the real day %s as written',
    (value) => {
      expect(calendarDate(value)).toBe(value);
    },
  );

  it.each([
    ['2026-02-29', 'no 29 February in a common year'],
    ['2100-02-29', 'no 29 February in a century not divisible by 400'],
    ['2026-04-31', 'April has 30 days'],
    ['2026-01-32', 'no month has 32 days'],
    ['2026-01-00', 'no day 0'],
    ['2026-00-10', 'no month 0'],
    ['2026-13-01', 'no month 13'],
    ['0000-01-01', 'Postgres has no year 0'],
    ['10000-01-01', 'five-digit years'],
    ['2026-1-01', 'a one-digit month'],
    [' 2026-01-01', 'text before the date'],
    ['2026-01-01x', 'text after the date'],
    ['2026-01-01T00:00:00Z', 'an instant where a date is asked'],
  ])('refuses %j (%s)', (value) => {
    expect(calendarDate(value)).toBeUndefined();
  });
});

describe('instants in a query', () => {
  it.each([
    ['2026-03-01', '2026-03-01T00:00:00Z'],
    ['2026-03-01T08:30', '2026-03-01T08:30:00Z'],
    ['2026-03-01T23:59:59', '2026-03-01T23:59:59Z'],
    ['2026-03-01t08:30:15z', '2026-03-01T08:30:15Z'],
    ['2026-03-01 08:30:15.123456789+02:00', '2026-03-01T08:30:15.123456789+02:00'],
    ['2026-03-01T08:30:15.5-0530', '2026-03-01T08:30:15.5-0530'],
    ['2026-03-01T08:30:15+14', '2026-03-01T08:30:15+14'],
    ['2026-03-01T08:30:15+15:59', '2026-03-01T08:30:15+15:59'],
  ])('reads %j as %j', (value, read) => {
    expect(isoInstant(value)).toBe(read);
  });

  it.each([
    ['2026-03-01T24:00', 'hour 24'],
    ['2026-03-01T23:60', 'minute 60'],
    ['2026-03-01T23:59:60', 'second 60'],
    ['2026-03-01T8:00', 'a one-digit hour'],
    ['2026-03-01T08', 'an hour without minutes'],
    ['2026-03-01T08:00:00.1234567890Z', 'ten digits of fraction'],
    ['2026-03-01T08:00:00+16:00', 'an offset of 16 hours, which Postgres refuses'],
    ['2026-03-01T08:00:00+14:60', 'an offset of 60 minutes'],
    ['2026-03-01T08:00:00+1', 'a one-digit offset'],
    ['2026-03-01T08:00:00 UTC', 'a zone name'],
    ['2026-02-30T08:00:00Z', 'a day that does not exist'],
    ['x2026-03-01T08:00:00Z', 'text before the instant'],
    ['soon', 'free text'],
    ['12', 'a bare number, which Date.parse reads as December 2001'],
  ])('refuses %j (%s)', (value) => {
    expect(isoInstant(value)).toBeUndefined();
  });
});

describe('text a query compares', () => {
  it.each([['finance'], [''], ['😀 ü ß']])('can store %j', (value) => {
    expect(isStorableText(value)).toBe(true);
  });

  it.each([['fin\u0000ance'], ['\ud800'], ['a\udc00b']])('cannot store %j (NUL or an unpaired surrogate)', (value) => {
    expect(isStorableText(value)).toBe(false);
  });
});
