import { InvalidInputError } from 'slonik';
import { findUnstorableText, PG_VALUE_RULES } from '../validation/index.ts';

/** SQLSTATE class 22: the value given cannot be held by the column or cast (a bad input, not a fault). */
const DATA_EXCEPTION = /^22[0-9A-Z]{3}$/;

/**
 * The SQLSTATE of the Postgres data exception behind `error` (slonik wraps the driver's error in
 * `cause`), or null when there is none. slonik turns 22P02 into an `InvalidInputError` without the code.
 */
export function dataExceptionState(error: unknown): string | null {
  const seen = new Set<unknown>();
  for (let current = error; current !== null && typeof current === 'object' && !seen.has(current); current = (current as { cause?: unknown }).cause) {
    seen.add(current);
    if (current instanceof InvalidInputError) return '22P02';
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && DATA_EXCEPTION.test(code)) return code;
  }
  return null;
}

export type RequestInputs = { body?: unknown; query?: unknown; params?: unknown };

/**
 * The words of a 4xx for a data exception that slipped past validation. The field is named where the
 * request shows it: the first string of the params, query or body that Postgres cannot hold. Never the
 * database's own text, which may quote SQL.
 */
export function describeDataException(inputs: RequestInputs): string {
  for (const context of ['params', 'query', 'body'] as const) {
    const path = findUnstorableText(inputs[context]);
    if (path !== null) return path === '(value)' ? `invalid ${context}: ${PG_VALUE_RULES.text}` : `invalid ${context}: '${path}' ${PG_VALUE_RULES.text}`;
  }
  return 'invalid request: a value is out of the range or form that can be stored (dates and instants must lie in years 0001-9999)';
}
