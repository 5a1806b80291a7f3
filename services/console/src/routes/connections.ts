import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  ConnectionResultSchema,
  ConnectionViewSchema,
  ConnectionWithSecretSchema,
  CreateConnectionBodySchema,
  UpdateConnectionBodySchema,
} from '../connections/connections-types.ts';
import type { ConnectionsService } from '../connections/connections-service.ts';
import { refuseUnlessLocalPeer } from '../sign-ins/demo-peer.ts';

const Params = z.object({ id: z.uuid({ error: 'must be a connection id' }) });

/**
 * Connection routes (design 4.4), behind the Console's Host check. Each maps the request to one service
 * call; the response schemas are the view, so credentials and hashes cannot be serialised.
 */
export function registerConnectionRoutes(app: FastifyInstance, connections: ConnectionsService): void {
  const routes = app.withTypeProvider<ZodTypeProvider>();

  routes.get('/api/connections', { schema: { response: { 200: z.object({ connections: z.array(ConnectionViewSchema) }) } } }, async () => ({
    connections: await connections.list(),
  }));

  routes.post(
    '/api/connections',
    { schema: { body: CreateConnectionBodySchema, response: { 201: ConnectionWithSecretSchema } } },
    async (request, reply) => {
      if (request.body.demo) refuseUnlessLocalPeer(request.socket.remoteAddress);
      return reply.code(201).send(await connections.create(request.body, request.id));
    },
  );

  routes.patch(
    '/api/connections/:id',
    { schema: { params: Params, body: UpdateConnectionBodySchema, response: { 200: ConnectionResultSchema } } },
    async (request) => connections.update(request.params.id, request.body, request.id),
  );

  routes.post(
    '/api/connections/:id/sync',
    { schema: { params: Params, response: { 202: z.object({ connection: ConnectionViewSchema, jobId: z.string() }) } } },
    async (request, reply) => reply.code(202).send(await connections.requestSync(request.params.id, request.id)),
  );

  routes.post('/api/connections/:id/pause', { schema: { params: Params, response: { 200: ConnectionResultSchema } } }, async (request) =>
    connections.pause(request.params.id, request.id),
  );

  routes.post('/api/connections/:id/resume', { schema: { params: Params, response: { 200: ConnectionResultSchema } } }, async (request) =>
    connections.resume(request.params.id, request.id),
  );

  routes.post(
    '/api/connections/:id/rotate-secret',
    { schema: { params: Params, response: { 200: ConnectionWithSecretSchema.required({ ingestSecret: true }) } } },
    async (request) => connections.rotateSecret(request.params.id, request.id),
  );

  routes.delete('/api/connections/:id', { schema: { params: Params } }, async (request, reply) => {
    await connections.remove(request.params.id, request.id);
    return reply.code(204).send();
  });
}
