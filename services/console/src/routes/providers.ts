import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { DatabasePool } from '@pcg/shared/db';
import { listProviderViews, ProviderViewSchema } from '../providers/provider-views.ts';

/**
 * `GET /api/providers`: every provider kind as data (design 7.1), the one route serving descriptors: the
 * Console page renders each connect form from it, and a script learns how each provider signs in.
 * Behind the Host check; a read, not recorded.
 */
export function registerProviderRoutes(app: FastifyInstance, { db }: { db: DatabasePool }): void {
  app
    .withTypeProvider<ZodTypeProvider>()
    .get('/api/providers', { schema: { response: { 200: z.object({ providers: z.array(ProviderViewSchema) }) } } }, async () => ({ providers: await listProviderViews(db) }));
}
