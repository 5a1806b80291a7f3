import fc from 'fast-check';
import type { FuzzStack } from '../fuzz-stack.ts';
import type { FuzzAnswer, FuzzRequest } from '../http-exchange.ts';

/** One surface of the service: what hostile requests look like there, and what the specification fixes about the answers. */
export type Surface = {
  name: string;
  requests(stack: FuzzStack): fc.Arbitrary<FuzzRequest>;
  /** Surface-specific problems with an answer, beyond the general ones (no 5xx, no internals, no secret). */
  check?(stack: FuzzStack, request: FuzzRequest, answer: FuzzAnswer): string[];
  /** Clean-up after an exchange (e.g. close a session the request opened, so the 512 cap is not what is tested). */
  after?(stack: FuzzStack, request: FuzzRequest, answer: FuzzAnswer): Promise<void>;
};

/** An Authorization header value: mostly the right one (so requests reach the checks behind it), else a wrong, malformed or missing one. */
export function authorization(right: string): fc.Arbitrary<string | undefined> {
  return fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(`Bearer ${right}`, `bearer ${right}`, `BEARER  ${right}`) },
    { weight: 2, arbitrary: fc.constantFrom('Bearer pcg_wrong', 'Bearer ', 'Basic Zm9vOmJhcg==', `Bearer ${right}x`, undefined) },
  );
}

export function withHeader(headers: Record<string, string>, name: string, value: string | undefined): Record<string, string> {
  return value === undefined ? headers : { ...headers, [name]: value };
}
