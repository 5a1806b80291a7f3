import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { NotFoundError } from '@pcg/shared/errors';
import type { WebAsset } from '../web/web-assets.ts';

/**
 * The operator Console page (design 7.2): `GET /` and its files under `/assets/`, all from this process.
 * Behind the Host check like every admin route; the security headers are added to every answer.
 */
export function registerWebRoutes(app: FastifyInstance, { assets }: { assets: ReadonlyMap<string, WebAsset> }): void {
  const routes = app.withTypeProvider<ZodTypeProvider>();
  const send = (name: string) => {
    const asset = assets.get(name);
    if (!asset) throw new NotFoundError('not found');
    return asset;
  };

  routes.get('/', async (_request, reply) => {
    const page = send('index.html');
    return reply.type(page.contentType).header('cache-control', 'no-cache').send(page.body);
  });

  routes.get('/assets/:name', { schema: { params: z.object({ name: z.string().max(100) }) } }, async (request, reply) => {
    const asset = send(request.params.name);
    return reply.type(asset.contentType).header('cache-control', 'no-cache').send(asset.body);
  });
}
