import { InvalidInputError } from 'slonik';
import type { z } from 'zod';
import { ValidationError } from '../errors/index.ts';

/** A query the engine refuses; its message names the problem and what is valid. Never a SQL error. */
export class QueryError extends ValidationError {
  constructor(message: string) {
    super(message);
    this.name = 'QueryError';
  }
}

/** One line per problem, each naming where it is: `where.0.op: …`. */
export function describeZodError(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const path = issue.path.map(String).join('.');
      const message =
        issue.code === 'unrecognized_keys'
          ? `unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((key) => `'${key}'`).join(', ')}`
          : issue.message;
      return path ? `${path}: ${message}` : message;
    })
    .join('; ');
}

/**
 * Whether the error is a Postgres data exception (SQLSTATE class 22: a value out of range, an
 * impossible date, bad text). Slonik re-wraps 22P02 as `InvalidInputError` without its code, and keeps
 * the driver's error (with `code`) for the rest, sometimes as the `cause`.
 */
export function isDataException(error: unknown): boolean {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth += 1) {
    if (current instanceof InvalidInputError) return true;
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && /^22[0-9A-Z]{3}$/.test(code)) return true;
  }
  return false;
}
