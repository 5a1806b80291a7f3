import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  AGENT_RULES,
  AgentNameSchema,
  AgentViewSchema,
  CreateAgentInputSchema,
  IssuedKeySchema,
  UpdateAgentInputSchema,
  type AgentService,
} from '@pcg/shared/grants';
import { ValidationError } from '@pcg/shared/errors';

export type AgentRoutesDeps = {
  agents: Pick<AgentService, 'createOrRotate' | 'list' | 'update' | 'rotate' | 'revoke' | 'remove'>;
};

const NameParamsSchema = z.object({ name: AgentNameSchema });

/**
 * The admin routes for agent grants (design 4.4), behind the Host check. Answers are serialised through
 * schemas picked from the row, so a key hash cannot reach the wire; a key appears only in the answers
 * to a create or a rotation, which are marked uncacheable. None of these acts is audited (spec 6).
 */
export function registerAgentRoutes(app: FastifyInstance, { agents }: AgentRoutesDeps): void {
  const routes = app.withTypeProvider<ZodTypeProvider>();

  routes.post(
    '/api/agents',
    { schema: { body: CreateAgentInputSchema, response: { 200: IssuedKeySchema, 201: IssuedKeySchema } } },
    async (request, reply) => {
      const { created, issued } = await agents.createOrRotate(request.body);
      return reply.code(created ? 201 : 200).header('cache-control', 'no-store').send(issued);
    },
  );

  routes.get('/api/agents', { schema: { response: { 200: z.array(AgentViewSchema) } } }, async () => agents.list());

  routes.patch(
    '/api/agents/:name',
    { schema: { params: NameParamsSchema, body: UpdateAgentInputSchema, response: { 200: AgentViewSchema } } },
    async (request) => {
      const { name } = request.params;
      const { name: bodyName, ...update } = request.body;
      if (bodyName !== undefined && bodyName !== name) {
        throw new ValidationError(`invalid body: 'name' ${AGENT_RULES.renameInPatch}`);
      }
      return agents.update(name, update);
    },
  );

  routes.post(
    '/api/agents/:name/rotate',
    { schema: { params: NameParamsSchema, response: { 200: IssuedKeySchema } } },
    async (request, reply) => reply.header('cache-control', 'no-store').send(await agents.rotate(request.params.name)),
  );

  routes.post(
    '/api/agents/:name/revoke',
    { schema: { params: NameParamsSchema, response: { 200: AgentViewSchema } } },
    async (request) => agents.revoke(request.params.name),
  );

  routes.delete(
    '/api/agents/:name',
    { schema: { params: NameParamsSchema, response: { 204: z.null() } } },
    async (request, reply) => {
      await agents.remove(request.params.name);
      return reply.code(204).send(null);
    },
  );
}
