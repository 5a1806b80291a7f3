import { z } from 'zod';

/**
 * The connection check (issue 32, design 8.2): the connector's own steps run once against the source,
 * each answered passed or failed in plain words, a failure naming its fix. The Console's Check button
 * and `pcg connections check` read exactly this shape.
 */
export const CheckStepSchema = z.object({
  /** Machine id, e.g. `credentials`, `token`, `scopes`, `endpoint:calendar`, `clock`, `rate_limits`. */
  step: z.string(),
  /** What was checked, in plain words. */
  title: z.string(),
  passed: z.boolean(),
  /** What was found, in plain words; when failed, it includes the fix. */
  message: z.string(),
});
export type CheckStep = z.infer<typeof CheckStepSchema>;

export const ConnectionCheckSchema = z.object({
  ok: z.boolean(),
  steps: z.array(CheckStepSchema),
  /** Requests sent to the source (a token refresh included); 0 for a push connection. */
  requests: z.number().int().nonnegative(),
});
export type ConnectionCheck = z.infer<typeof ConnectionCheckSchema>;

/** A check sends at most this many requests to the source (issue 32). */
export const CHECK_MAX_REQUESTS = 10;
/** A check stops asking the source after this long (issue 32). */
export const CHECK_TIME_BUDGET_MS = 20_000;

/**
 * The credential step run before a token connection is saved (issue 32 "Checked at connect"):
 * `refused` the source refused the credential (nothing is saved); `unreachable` it could not be asked
 * (saved, with `message` as the warning); `passed` it accepted it; `unchecked` the provider has no
 * credential step the sync-worker can run (saved as before).
 */
export const CredentialCheckResultSchema = z.object({
  outcome: z.enum(['passed', 'refused', 'unreachable', 'unchecked']),
  message: z.string(),
});
export type CredentialCheckResult = z.infer<typeof CredentialCheckResultSchema>;

/** Builds the answer from its steps: ok when every step passed. */
export function checkAnswer(steps: readonly CheckStep[], requests: number): ConnectionCheck {
  return { ok: steps.length > 0 && steps.every((step) => step.passed), steps: [...steps], requests };
}
