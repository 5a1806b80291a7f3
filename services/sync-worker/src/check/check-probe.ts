import { CHECK_MAX_REQUESTS, CHECK_TIME_BUDGET_MS } from '@pcg/shared/connections';

/** Headers that tell how much of a rate limit is left (or how long to wait). */
const RATE_LIMIT_HEADER = /ratelimit|rate-limit|retry-after|throttl/i;

/** The budget ran out: no request is sent past it. */
export class CheckBudgetSpentError extends Error {}

/**
 * What one check sends and sees: a `fetch` that counts every request (each redirect hop included) and
 * refuses past the budget (through `transport`, default the global fetch), the clock of the source's `Date` headers, and the rate-limit headers seen.
 * Its `signal` ends the check's time budget.
 */
export function createCheckProbe(options: { maxRequests?: number; budgetMs?: number; signal?: AbortSignal; now?: () => number; transport?: typeof fetch } = {}) {
  const transport = options.transport ?? fetch;
  const maxRequests = options.maxRequests ?? CHECK_MAX_REQUESTS;
  const now = options.now ?? Date.now;
  const budget = AbortSignal.timeout(options.budgetMs ?? CHECK_TIME_BUDGET_MS);
  const signal = options.signal ? AbortSignal.any([options.signal, budget]) : budget;
  let requests = 0;
  let skewMs: number | undefined;
  const rateLimits = new Map<string, string>();

  const probeFetch: typeof fetch = async (input, init) => {
    if (requests >= maxRequests) throw new CheckBudgetSpentError(`the check's budget of ${maxRequests} requests is spent`);
    requests += 1;
    const response = await transport(input, init);
    const date = response.headers.get('date');
    const at = date === null ? Number.NaN : Date.parse(date);
    // A Date header has whole seconds: the local clock is read the same way.
    if (!Number.isNaN(at)) skewMs = Math.floor(now() / 1000) * 1000 - at;
    response.headers.forEach((value, name) => {
      if (RATE_LIMIT_HEADER.test(name)) rateLimits.set(name.toLowerCase(), value);
    });
    return response;
  };

  return {
    fetch: probeFetch,
    signal,
    /** Counts a request made outside this fetch (a token refresh through the sign-ins' refresher). */
    countOne(): void {
      requests += 1;
    },
    requests: () => requests,
    spent: () => requests >= maxRequests,
    timedOut: () => budget.aborted,
    remainingMs: (startedAt: number) => Math.max(0, (options.budgetMs ?? CHECK_TIME_BUDGET_MS) - (now() - startedAt)),
    /** Local clock minus the source's, in milliseconds, from the last `Date` header; undefined when none came. */
    skewMs: () => skewMs,
    rateLimits: () => new Map(rateLimits),
    maxRequests,
  };
}

export type CheckProbe = ReturnType<typeof createCheckProbe>;
