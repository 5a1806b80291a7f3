import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { PROVIDERS, type ProviderDescriptor } from '@pcg/shared/providers';

export const ProviderViewSchema = z.object({
  kind: z.string(),
  displayName: z.string(),
  sectors: z.array(z.string()),
  objects: z.array(z.string()),
  signIn: z.string(),
  defaultSyncIntervalMinutes: z.number().nullable(),
  /** The JSON Schema of what the operator types to connect (its input side); null when nothing is typed. */
  credentials: z.record(z.string(), z.unknown()).nullable(),
});
export type ProviderView = z.infer<typeof ProviderViewSchema>;

export function providerView(provider: ProviderDescriptor): ProviderView {
  return {
    kind: provider.kind,
    displayName: provider.displayName,
    sectors: [...provider.sectors],
    objects: [...provider.objects],
    signIn: provider.signIn,
    defaultSyncIntervalMinutes: provider.defaultSyncIntervalMinutes,
    credentials: provider.credentialsSchema ? (z.toJSONSchema(provider.credentialsSchema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>) : null,
  };
}

/**
 * `GET /api/providers`: every provider kind as data, so the Console page renders each one's connect form
 * from its descriptor and a new provider needs no page code (design 7.1).
 */
export function registerProviderRoutes(app: FastifyInstance): void {
  const views = PROVIDERS.map(providerView);
  app.withTypeProvider<ZodTypeProvider>().get('/api/providers', { schema: { response: { 200: z.array(ProviderViewSchema) } } }, async () => views);
}
