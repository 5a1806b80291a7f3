import type { JobsOptions } from 'bullmq';
import { z } from 'zod';
import { ActionInvokeRequestSchema, LiveFetchRequestSchema } from '../live/index.ts';
import { DemoEndpointsSchema } from '../providers/demo-endpoints.ts';

/**
 * The one catalogue of queues and jobs (design 4.8): names, zod payloads, attempts, backoff and retention.
 * Producers parse a payload before `add()`; workers parse `job.data` before dispatch.
 */

/** Why a sync runs; shown in logs and kept on the job. */
export const SyncReasonSchema = z.enum(['scheduled', 'manual', 'created', 'resumed']);

export const SyncJobSchema = z.object({
  connectionId: z.uuid(),
  reason: SyncReasonSchema,
});
export type SyncJob = z.infer<typeof SyncJobSchema>;

/** What a finished sync job returns (kept for a day with the job, for the Console and logs). */
export const SyncJobResultSchema = z.object({
  outcome: z.enum(['synced', 'skipped']),
  /** Why it was skipped: the connection is gone, paused or waiting for sign-in, or its provider pulls nothing. */
  detail: z.string().optional(),
  written: z.number().int().nonnegative().default(0),
  removed: z.number().int().nonnegative().default(0),
  mode: z.enum(['full', 'incremental']).optional(),
});
export type SyncJobResult = z.infer<typeof SyncJobResultSchema>;

/** `deadline` (epoch ms): past it nobody awaits the answer any more, so the worker drops the job unrun. */
const deadline = z.number().int().positive();
export const LiveFetchJobSchema = LiveFetchRequestSchema.extend({ deadline });
export const ActionInvokeJobSchema = ActionInvokeRequestSchema.extend({ deadline });
export const LiveJobSchema = z.discriminatedUnion('kind', [LiveFetchJobSchema, ActionInvokeJobSchema]);
export type LiveJob = z.infer<typeof LiveJobSchema>;

/**
 * A live job always completes with one of these: the source's answer, or a failure message that is safe
 * to show an agent (never a stack, a URL with a credential, or a raw provider body).
 */
export const LiveJobResultSchema = z.discriminatedUnion('status', [
  z.object({ status: z.literal('answered'), value: z.unknown() }),
  z.object({ status: z.literal('failed'), message: z.string() }),
]);
export type LiveJobResult = z.infer<typeof LiveJobResultSchema>;

/** The connection check (issue 32): the connector's own steps against the source, answered as a `ConnectionCheck`. */
export const ConnectionCheckJobSchema = z.object({ connectionId: z.uuid(), deadline });
export type ConnectionCheckJob = z.infer<typeof ConnectionCheckJobSchema>;

/**
 * The credential step of the check, before a token connection is saved (issue 32): the credentials travel
 * sealed (base64, bound to `signInId`, the sign-in about to be made), so Redis holds only ciphertext.
 * Answered as a `CredentialCheckResult`.
 */
export const CredentialCheckJobSchema = z.object({
  provider: z.string().min(1),
  signInId: z.uuid(),
  sealedCredentials: z.base64().min(1).max(8192),
  /** A demo sign-in's stand-ins (issue 42): its credentials are checked there, never at the real source. */
  demoEndpoints: DemoEndpointsSchema.optional(),
  deadline,
});
export type CredentialCheckJob = z.infer<typeof CredentialCheckJobSchema>;

/**
 * The code exchange of a provider sign-in (design 7.1): the Console hands the callback's code to the
 * sync-worker, which alone talks to the provider, and awaits the outcome. `signInId` names the sign-in
 * being renewed; without it the grant makes a new one (or renews the same account's).
 */
export const OAuthExchangeJobSchema = z.object({
  provider: z.string().min(1),
  code: z.string().min(1).max(4096),
  codeVerifier: z.string().min(43).max(128).optional(),
  redirectUri: z.url(),
  signInId: z.uuid().optional(),
  /** A demo's new sign-in (issue 42): the loopback stand-ins it is marked with and sent to. */
  demoEndpoints: DemoEndpointsSchema.optional(),
  deadline,
});
export type OAuthExchangeJob = z.infer<typeof OAuthExchangeJobSchema>;

/**
 * The claim of a one-time setup token (the bank-link bridge, design 7.1): the sync-worker decodes the
 * claim address, claims it once, seals what it returns, and creates the connection before it answers.
 * `confirmHost` is the claim host the operator was shown; the claim runs only when it matches.
 */
export const TokenClaimJobSchema = z.object({
  provider: z.string().min(1),
  setupToken: z.string().min(1).max(2048),
  confirmHost: z.string().min(1).max(255),
  displayName: z.string().min(1).max(200).optional(),
  syncIntervalMinutes: z.number().int().positive().optional(),
  /** A demo's claim (issue 42): the loopback bridge origin its new sign-in is marked with. */
  demoEndpoints: DemoEndpointsSchema.optional(),
  deadline,
});
export type TokenClaimJob = z.infer<typeof TokenClaimJobSchema>;

/**
 * The start of a `link` sign-in (the bank aggregator, design 7.1): the sync-worker asks the aggregator
 * for a hosted link whose completion sends the browser to `completionRedirect` (the Console's callback
 * with the sign-in's state). `signInId` opens the link in update mode for that sign-in's item.
 */
export const LinkStartJobSchema = z.object({
  provider: z.string().min(1),
  completionRedirect: z.url({ protocol: /^https?$/ }),
  signInId: z.uuid().optional(),
  /** A demo's new sign-in (issue 42): the loopback stand-ins it is marked with and sent to. */
  demoEndpoints: DemoEndpointsSchema.optional(),
  deadline,
});
export type LinkStartJob = z.infer<typeof LinkStartJobSchema>;

/**
 * The end of a `link` sign-in: the browser came back; the sync-worker reads the link session's result,
 * trades its public token for the item's access token and seals it (or, in update mode, checks that
 * the item's login is repaired).
 */
export const LinkExchangeJobSchema = z.object({
  provider: z.string().min(1),
  linkToken: z.string().min(1).max(512),
  signInId: z.uuid().optional(),
  /** A demo's new sign-in (issue 42): the loopback stand-ins it is marked with and sent to. */
  demoEndpoints: DemoEndpointsSchema.optional(),
  deadline,
});
export type LinkExchangeJob = z.infer<typeof LinkExchangeJobSchema>;

/**
 * The removal of an aggregator's item whose last connection was deleted (design 7.1: the Console never
 * talks to a source). The item's credentials travel as they were sealed on the deleted sign-in (base64,
 * bound to `signInId`): Redis holds only ciphertext, and no credential stays in the database after its
 * last connection. Best effort, retried with backoff, then logged.
 */
export const ItemRemoveJobSchema = z.object({
  provider: z.string().min(1),
  signInId: z.uuid(),
  sealedCredentials: z.base64().min(1).max(8192),
  /** A demo sign-in's stand-ins (issue 42): its item is removed at the demo's aggregator, never the real one. */
  demoEndpoints: DemoEndpointsSchema.optional(),
});
export type ItemRemoveJob = z.infer<typeof ItemRemoveJobSchema>;

/** What a removal job ends with: removed now, or already gone at the aggregator, or not sent (no application saved, credentials unreadable). */
export const ItemRemoveResultSchema = z.object({ outcome: z.enum(['removed', 'already_gone', 'skipped']), detail: z.string().optional() });
export type ItemRemoveResult = z.infer<typeof ItemRemoveResultSchema>;

const RefusedSignInSchema = z.object({
  status: z.literal('refused'),
  /**
   * `token_refused`: the bridge refused the setup token (unknown, or claimed already); `already_claimed`: this gateway claimed it before;
   * `credential_refused`: the source refused the credential the sign-in gave, at the check's credential step (issue 32), so nothing was saved.
   */
  reason: z.enum(['no_sectors', 'other_account', 'provider_refused', 'unreachable', 'not_configured', 'token_refused', 'already_claimed', 'address_refused', 'credential_refused']),
  message: z.string(),
});

/** What the start of a `link` sign-in gives: the hosted page to send the browser to, or a refusal. */
export const LinkStartResultSchema = z.discriminatedUnion('status', [
  z.object({ status: z.literal('started'), linkToken: z.string().min(1), hostedLinkUrl: z.url({ protocol: /^https?$/ }) }),
  RefusedSignInSchema,
]);
export type LinkStartResult = z.infer<typeof LinkStartResultSchema>;

/** How a sign-in ended; `message` is safe to show the operator (never a token or a provider's raw body). */
export const SignInJobResultSchema = z.discriminatedUnion('status', [
  z.object({
    status: z.literal('signed_in'),
    signInId: z.string(),
    renewed: z.boolean(),
    /** The connections that now sync, one per granted sector. */
    connectionIds: z.array(z.string()),
    grantedSectors: z.array(z.string()),
    /** Sectors of a renewed sign-in no longer granted; their connections wait for a sign-in, data kept. */
    waiting: z.array(z.string()),
    /** Saved, but the check's credential step could not ask the source (issue 32): shown to the operator. */
    warning: z.string().optional(),
  }),
  RefusedSignInSchema,
]);
export type SignInJobResult = z.infer<typeof SignInJobResultSchema>;

/** Backoff type the sync-worker implements (exponential with jitter from its configured base). */
export const SOURCE_BACKOFF = 'source-backoff';

/**
 * A removal is retried (unlike the rest of the `signin` queue: removing an item twice is harmless, the
 * second answer is ITEM_NOT_FOUND), and the job goes when it ends, either way: its payload holds sealed
 * credentials, which are kept nowhere longer than needed.
 */
export const ITEM_REMOVE_JOB_OPTIONS = {
  attempts: 5,
  backoff: { type: SOURCE_BACKOFF },
  removeOnComplete: true,
  removeOnFail: true,
} as const satisfies JobsOptions;

export const QUEUES = {
  sync: {
    name: 'sync',
    jobs: { sync: SyncJobSchema },
    defaultJobOptions: {
      attempts: 5,
      backoff: { type: SOURCE_BACKOFF },
      removeOnComplete: { age: 24 * 3600, count: 1000 },
      removeOnFail: { age: 7 * 24 * 3600, count: 1000 },
    } satisfies JobsOptions,
  },
  live: {
    name: 'live',
    jobs: { fetch_live: LiveFetchJobSchema, invoke_action: ActionInvokeJobSchema, check_connection: ConnectionCheckJobSchema, check_credentials: CredentialCheckJobSchema },
    // Never retried: an action must not run twice, and a caller that timed out has gone. Finished jobs
    // stay a few minutes so that a caller whose wait began after the finish still reads the answer.
    defaultJobOptions: {
      attempts: 1,
      removeOnComplete: { age: 300, count: 10_000 },
      removeOnFail: { age: 300, count: 10_000 },
    } satisfies JobsOptions,
  },
  signin: {
    name: 'signin',
    jobs: { oauth_exchange: OAuthExchangeJobSchema, token_claim: TokenClaimJobSchema, link_start: LinkStartJobSchema, link_exchange: LinkExchangeJobSchema, item_remove: ItemRemoveJobSchema },
    // Never retried (a code or a setup token works once; `item_remove` sets its own options). The payload holds a one-time code: finished jobs go after a
    // minute, long enough for the awaiting Console to read the answer.
    defaultJobOptions: {
      attempts: 1,
      removeOnComplete: { age: 60 },
      removeOnFail: { age: 60 },
    } satisfies JobsOptions,
  },
} as const;

export type QueueName = keyof typeof QUEUES;
export type JobNameOf<Q extends QueueName> = keyof (typeof QUEUES)[Q]['jobs'] & string;

/** The job scheduler of one connection's periodic sync. */
export function syncSchedulerId(connectionId: string): string {
  return `connection:${connectionId}`;
}
