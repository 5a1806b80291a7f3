import type { FastifyInstance } from 'fastify';

/** Liveness: answers 200 while the process serves HTTP. Exempt from the Host check (spec 5). */
export function registerHealthzRoute(app: FastifyInstance): void {
  app.get('/healthz', async () => ({ status: 'ok' }));
}
