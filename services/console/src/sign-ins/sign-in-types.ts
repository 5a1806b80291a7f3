import { z } from 'zod';
import { DemoEndpointsSchema } from '@pcg/shared/providers';
import { pgText } from '@pcg/shared/validation';

/** The body of `PUT /api/connect/:provider/app`: the provider's client id and secret; write-only. */
export const ProviderAppBodySchema = z.object({
  clientId: pgText(z.string().trim().min(1).max(1024)),
  clientSecret: pgText(z.string().min(1).max(4096)),
  /** A `link` provider's environment (its API address and its items); required for one, refused for others. */
  environment: z.enum(['sandbox', 'production']).optional(),
});

export const CallbackQuerySchema = z.object({
  code: z.string().max(4096).optional(),
  state: z.string().max(256).optional(),
  error: z.string().max(256).optional(),
});

export const StartQuerySchema = z.object({ signInId: z.uuid().optional() });

/** The body of `POST /api/connect/:provider/demo-start`: the loopback stand-ins a new demo sign-in is marked with (issue 42). */
export const DemoStartBodySchema = z.object({ endpoints: DemoEndpointsSchema });

/** The body of `POST /api/connect/:provider/claim`: a one-time setup token and, once shown, the claim host it decodes to. */
export const ClaimBodySchema = z.object({
  setupToken: pgText(z.string().trim().min(8).max(2048)),
  /** The host the first answer showed; the claim runs only when it is sent back unchanged. */
  confirmHost: pgText(z.string().trim().min(1).max(255)).optional(),
  displayName: pgText(z.string().trim().min(1).max(200)).optional(),
  syncIntervalMinutes: z.number().int().min(60).max(7 * 24 * 60).optional(),
  /** A demo's claim (issue 42): taken from this machine only, for a bridge on loopback only, and marks the new sign-in. */
  demo: z.literal(true).optional(),
});
export type ClaimBody = z.infer<typeof ClaimBodySchema>;
