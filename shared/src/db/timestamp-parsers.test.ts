import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseTimestamp, parseTimestamptz } from './timestamp-parsers.ts';

describe('the pool\'s timestamptz parser (total: no stored value fails a read)', () => {
  it.each([
    ['infinity', 'infinity'],
    ['-infinity', '-infinity'],
    ['0001-01-01 00:00:00+00 BC', '0001-01-01 00:00:00+00 BC'],
    ['294276-12-31 23:59:59+00', '294276-12-31 23:59:59+00'],
    ['10000-01-01 00:00:00+00', '10000-01-01 00:00:00+00'],
  ])('keeps Postgres\'s own text for %s, which has no ISO instant in years 0001-9999', (text, served) => {
    expect(parseTimestamptz(text)).toBe(served);
  });

  it.each([
    ['2026-03-01 07:00:00+00', '2026-03-01T07:00:00.000Z'],
    ['2026-03-01 07:00:00.123456+00', '2026-03-01T07:00:00.123Z'],
    ['2026-03-01 09:30:00.5+02:30', '2026-03-01T07:00:00.500Z'],
    ['1850-01-01 00:09:21+00:09:21', '1850-01-01T00:00:00.000Z'],
    ['2026-03-01 01:00:00-06', '2026-03-01T07:00:00.000Z'],
    ['0001-01-01 00:00:00+00', '0001-01-01T00:00:00.000Z'],
    ['0099-06-15 12:00:00+00', '0099-06-15T12:00:00.000Z'],
    ['9999-12-31 23:59:59.999999+00', '9999-12-31T23:59:59.999Z'],
  ])('serves %s as ISO 8601 UTC with milliseconds', (text, served) => {
    expect(parseTimestamptz(text)).toBe(served);
  });

  it('serves every UTC instant of years 1000-9999 as Date.toISOString does, whatever the digits of the fraction', () => {
    const pad = (value: number, width = 2) => String(value).padStart(width, '0');
    fc.assert(
      fc.property(fc.date({ min: new Date('1000-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59.999Z'), noInvalidDate: true }), fc.integer({ min: 0, max: 999 }), fc.integer({ min: 0, max: 6 }), (instant, micros, digits) => {
        const base = `${pad(instant.getUTCFullYear(), 4)}-${pad(instant.getUTCMonth() + 1)}-${pad(instant.getUTCDate())} ${pad(instant.getUTCHours())}:${pad(instant.getUTCMinutes())}:${pad(instant.getUTCSeconds())}`;
        const fraction = `${pad(instant.getUTCMilliseconds(), 3)}${pad(micros, 3)}`.slice(0, digits).replace(/0+$/, '');
        const text = `${base}${fraction === '' ? '' : `.${fraction}`}+00`;
        const expected = new Date(Date.parse(`${base.replace(' ', 'T')}.${fraction.padEnd(3, '0').slice(0, 3)}Z`)).toISOString();
        expect(parseTimestamptz(text)).toBe(expected);
      }),
      { numRuns: 2_000 },
    );
  });

  it('keeps the text when the offset would move the instant out of years 0001-9999', () => {
    expect(parseTimestamptz('0001-01-01 00:00:00+01')).toBe('0001-01-01 00:00:00+01');
    expect(parseTimestamptz('9999-12-31 23:00:00-02')).toBe('9999-12-31 23:00:00-02');
  });

  it('reads a timestamp without zone as UTC, and is total too', () => {
    expect(parseTimestamp('2026-03-01 07:00:00.25')).toBe('2026-03-01T07:00:00.250Z');
    expect(parseTimestamp('infinity')).toBe('infinity');
    expect(parseTimestamp('0044-03-15 12:00:00 BC')).toBe('0044-03-15 12:00:00 BC');
  });
});
