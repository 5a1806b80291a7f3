import type { CheckStep } from '@pcg/shared/connections';
import { SourceAddressRefusedError, SourceAppCredentialsError, SourceAuthError, SourceRateLimitedError, SourceRejectedError, SourceTokenExpiredError, SourceUnavailableError } from '../connectors/kit/source-errors.ts';
import type { CheckPlan } from './check-plans.ts';

export const passed = (step: string, title: string, message: string): CheckStep => ({ step, title, passed: true, message });
export const failed = (step: string, title: string, message: string): CheckStep => ({ step, title, passed: false, message });

/** A clock further off than this breaks token lifetimes and sync windows (a guess: the common five-minute leeway of token checks). */
export const MAX_CLOCK_SKEW_MS = 5 * 60_000;

/** Why a read failed, in plain words, with what to do about it. */
export function describeReadFailure(error: unknown, plan: Pick<CheckPlan, 'what' | 'name' | 'credentialFix' | 'addressFix'>): string {
  if (error instanceof SourceAddressRefusedError) return `${error.message}: ${plan.addressFix ?? `enter ${plan.what}'s own address`}`;
  if (error instanceof SourceAuthError || error instanceof SourceTokenExpiredError) return `${error.message}: ${plan.credentialFix}`;
  if (error instanceof SourceRateLimitedError) return `${error.message}: wait that long and check again`;
  if (error instanceof SourceAppCredentialsError) return error.message;
  if (error instanceof SourceUnavailableError) return `${error.message}: check that ${plan.what} is running and reachable from the gateway, then check again`;
  if (error instanceof SourceRejectedError) {
    if (error.status === 403) return `${error.message}: ${plan.name} refused this read; ${plan.credentialFix}`;
    if (error.status === 404) return `${error.message}: check the address saved for ${plan.what}`;
    return error.message;
  }
  return 'the check failed inside the gateway; see the sync-worker log';
}

/** Whether a granted scope list holds a scope (Microsoft may answer with the resource's URI before it). */
export function grants(granted: readonly string[], scope: string): boolean {
  const wanted = scope.toLowerCase();
  return granted.some((given) => given.toLowerCase() === wanted || given.toLowerCase().endsWith(`/${wanted}`));
}

export function clockStep(skewMs: number | undefined, what: string): CheckStep {
  const title = "The gateway's clock agrees with the source's";
  if (skewMs === undefined) return passed('clock', title, `not compared: no answer from ${what} carried a Date header`);
  const seconds = Math.round(Math.abs(skewMs) / 1000);
  if (Math.abs(skewMs) > MAX_CLOCK_SKEW_MS) {
    return failed('clock', title, `the gateway's clock is ${seconds} s ${skewMs > 0 ? 'ahead of' : 'behind'} ${what}'s: set the machine's clock (turn on network time, NTP), then check again`);
  }
  return passed('clock', title, `within ${seconds} s of ${what}'s clock`);
}

export function rateLimitStep(headers: ReadonlyMap<string, string>, limited: SourceRateLimitedError | undefined, what: string): CheckStep {
  const title = 'The source is not rate limiting the gateway';
  const seen = [...headers].map(([name, value]) => `${name}: ${value}`).join(', ');
  if (limited) return failed('rate_limits', title, `${limited.message}${seen ? ` (${seen})` : ''}: wait that long before syncing or checking again`);
  return passed('rate_limits', title, seen ? `rate-limit headers seen: ${seen}` : `${what} sent no rate-limit headers, and no read was refused for rate`);
}
