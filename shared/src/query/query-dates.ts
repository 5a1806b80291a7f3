/**
 * Relative dates in `where` ("last_month", "last_30_days"), resolved to a range of local calendar days
 * in the person's time zone. Weeks start on Monday; `last_N_days` and `next_N_days` include today.
 */
export const RELATIVE_DATES = [
  'today',
  'yesterday',
  'tomorrow',
  'this_week',
  'last_week',
  'next_week',
  'this_month',
  'last_month',
  'next_month',
  'this_year',
  'last_year',
  'last_N_days',
  'next_N_days',
] as const;

/** The longest `last_N_days` / `next_N_days` taken: ten years. */
export const MAX_RELATIVE_DAYS = 3_660;

const N_DAYS = /^(last|next)_(\d{1,4})_days$/;

/** One relative value resolved: the first and the last local day it covers, both included. */
export type DateRange = { relative: string; from: string; to: string; time_zone: string };

/** Whether a value is written as a relative date (it may still be out of range; `resolveRelativeDate` says). */
export function looksRelative(value: unknown): value is string {
  return typeof value === 'string' && ((RELATIVE_DATES as readonly string[]).includes(value) || N_DAYS.test(value));
}

/** The local calendar day of an instant in an IANA zone, as YYYY-MM-DD. */
export function localDate(at: Date, timeZone: string): string {
  const parts = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).formatToParts(at);
  const part = (type: string) => parts.find((entry) => entry.type === type)?.value ?? '';
  return `${part('year')}-${part('month')}-${part('day')}`;
}

/** Plain calendar arithmetic on YYYY-MM-DD, done at UTC midnight so no zone or DST can shift it. */
const toDay = (date: string) => Date.UTC(Number(date.slice(0, 4)), Number(date.slice(5, 7)) - 1, Number(date.slice(8, 10)));
const fromDay = (time: number) => new Date(time).toISOString().slice(0, 10);
const addDays = (date: string, days: number) => fromDay(toDay(date) + days * 86_400_000);
const monthStart = (date: string, months: number) => {
  const at = new Date(toDay(date));
  return fromDay(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + months, 1));
};

/** The range a relative value names on the person's today, or an error text naming what is valid. */
export function resolveRelativeDate(value: string, now: Date, timeZone: string): DateRange | string {
  const today = localDate(now, timeZone);
  const range = (from: string, to: string): DateRange => ({ relative: value, from, to, time_zone: timeZone });
  const nDays = N_DAYS.exec(value);
  if (nDays) {
    const days = Number(nDays[2]);
    if (days < 1 || days > MAX_RELATIVE_DAYS) return `${value}: N is from 1 to ${MAX_RELATIVE_DAYS}`;
    return nDays[1] === 'last' ? range(addDays(today, 1 - days), today) : range(today, addDays(today, days - 1));
  }
  // getUTCDay: Sunday 0 … Saturday 6; Monday is the first day of a week.
  const monday = addDays(today, -((new Date(toDay(today)).getUTCDay() + 6) % 7));
  const year = today.slice(0, 4);
  switch (value) {
    case 'today':
      return range(today, today);
    case 'yesterday':
      return range(addDays(today, -1), addDays(today, -1));
    case 'tomorrow':
      return range(addDays(today, 1), addDays(today, 1));
    case 'this_week':
      return range(monday, addDays(monday, 6));
    case 'last_week':
      return range(addDays(monday, -7), addDays(monday, -1));
    case 'next_week':
      return range(addDays(monday, 7), addDays(monday, 13));
    case 'this_month':
      return range(monthStart(today, 0), addDays(monthStart(today, 1), -1));
    case 'last_month':
      return range(monthStart(today, -1), addDays(monthStart(today, 0), -1));
    case 'next_month':
      return range(monthStart(today, 1), addDays(monthStart(today, 2), -1));
    case 'this_year':
      return range(`${year}-01-01`, `${year}-12-31`);
    case 'last_year':
      return range(`${Number(year) - 1}-01-01`.padStart(10, '0'), `${Number(year) - 1}-12-31`.padStart(10, '0'));
    default:
      return `'${value}' is not a relative date; use ${RELATIVE_DATES.join(', ')} (N a whole number of days)`;
  }
}

/** The day after a date, for half-open instant ranges that end at the next local midnight. */
export const dayAfter = (date: string) => addDays(date, 1);
