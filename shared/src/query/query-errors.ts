import type { z } from 'zod';
import { ValidationError } from '../http/index.ts';

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
