import { parseTimestamp, parseTimestamptz } from './timestamp-parsers.ts';

function parseInt8(value: string): number {
  const parsed = Number(value);
  if (!Number.isSafeInteger(parsed)) throw new RangeError(`int8 value ${value} is outside the safe integer range`);
  return parsed;
}

/** A column type read differently from pg's default, with its built-in oids (fixed in every Postgres). */
export type TypeParser = { name: string; oid: number; arrayOid: number; parse: (value: string) => unknown };

/**
 * Type parsers for the shapes the wire needs: int8 as a number (BigInt breaks JSON.stringify; ids that
 * may exceed 2^53 are selected as text), numeric as its exact decimal string (money), and timestamps as
 * ISO 8601 UTC strings with milliseconds (Postgres's own text for a value that has none, such as
 * `infinity`: a parser that throws would fail every read of that row). Dates stay `YYYY-MM-DD`.
 * Both ways to the database read with these: the slonik pool by name, the direct reads by oid.
 */
export const TYPE_PARSERS: readonly TypeParser[] = [
  { name: 'int8', oid: 20, arrayOid: 1016, parse: parseInt8 },
  { name: 'numeric', oid: 1700, arrayOid: 1231, parse: (value: string) => value },
  { name: 'timestamptz', oid: 1184, arrayOid: 1185, parse: parseTimestamptz },
  { name: 'timestamp', oid: 1114, arrayOid: 1115, parse: parseTimestamp },
  { name: 'date', oid: 1082, arrayOid: 1182, parse: (value: string) => value },
];
