import { z } from 'zod';
import { DemoEndpointsSchema } from '../providers/demo-endpoints.ts';

/** Spec 7: what the Console says when a provider's sign-in returned no scope that covers a sector. */
export const NO_SECTORS_GRANTED = 'the sign-in granted no sectors';

/** A re-sign-in that the provider reports for another account than the one the sign-in holds. */
/** A demo sign-in and an operator's sign-in never renew each other: the demo mark is never added nor taken off (issue 42). */
export const DEMO_MARK_FIXED = 'a demo sign-in and an operator\'s sign-in are kept apart: the demo mark is set when a sign-in is made and never added to, or taken off, an existing one';

export const OTHER_ACCOUNT =
  'the provider signed in another account than the one this sign-in holds; its data is kept apart: sign in with the same account, or remove these connections and connect the other account anew';

export const SignInStatusSchema = z.enum(['active', 'needs_sign_in']);

/** A sign-in as every process reads it; the sealed credentials are read only by `sealed()`. */
export const SignInRowSchema = z.object({
  id: z.string(),
  provider: z.string(),
  status: SignInStatusSchema,
  granted_scopes: z.array(z.string()),
  account_id: z.string().nullable(),
  last_refreshed_at: z.string().nullable(),
  last_error: z.string().nullable(),
  /** A demo sign-in's loopback stand-ins (issue 42), set when it was made; null for every other sign-in. */
  demo_endpoints: DemoEndpointsSchema.nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type SignInRow = z.infer<typeof SignInRowSchema>;

/** A sign-in with the connections it holds (one per sector), for the Console's list of sign-ins. */
export const SignInWithConnectionsSchema = SignInRowSchema.extend({
  connections: z.array(z.object({ id: z.string(), sector: z.string(), display_name: z.string(), status: z.string() })),
});
export type SignInWithConnections = z.infer<typeof SignInWithConnectionsSchema>;

/**
 * A provider's application credentials (the app the operator registered with it), sealed in
 * `provider_apps`. A `link` provider's app also names its environment (sandbox or production).
 */
export const ProviderAppSchema = z.object({ clientId: z.string().min(1), clientSecret: z.string().min(1), environment: z.enum(['sandbox', 'production']).optional() });
export type ProviderApp = z.infer<typeof ProviderAppSchema>;
