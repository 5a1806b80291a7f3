import { z } from 'zod';
import { pgText } from '@pcg/shared/validation';

/** The body of `PUT /api/connect/:provider/app`: the provider's client id and secret; write-only. */
export const ProviderAppBodySchema = z.object({
  clientId: pgText(z.string().trim().min(1).max(1024)),
  clientSecret: pgText(z.string().min(1).max(4096)),
});

export const CallbackQuerySchema = z.object({
  code: z.string().max(4096).optional(),
  state: z.string().max(256).optional(),
  error: z.string().max(256).optional(),
});

export const StartQuerySchema = z.object({ signInId: z.uuid().optional() });
