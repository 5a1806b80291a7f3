import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { AccountMatchAnswerSchema, AccountMatchListSchema, AccountMatchParamsSchema, AccountMatchViewSchema, type AccountMatchService } from '@pcg/shared/finance';

export type AccountMatchRoutesDeps = { accountMatches: Pick<AccountMatchService, 'list' | 'answer'> };

/**
 * Finance account deduplication (spec 2.1), behind the Host check: the pairs two connections both
 * deliver, open questions first, and the operator's answer to one. Listing is an operator read (no
 * audit row); an answer changes what agents read, so it is a Console act with its row.
 */
export function registerAccountMatchRoutes(app: FastifyInstance, { accountMatches }: AccountMatchRoutesDeps): void {
  const routes = app.withTypeProvider<ZodTypeProvider>();

  routes.get('/api/finance/account-matches', { schema: { response: { 200: AccountMatchListSchema } } }, async () => accountMatches.list());

  routes.post(
    '/api/finance/account-matches/:id',
    { schema: { params: AccountMatchParamsSchema, body: AccountMatchAnswerSchema, response: { 200: AccountMatchViewSchema } } },
    async (request) => accountMatches.answer(request.params.id, request.body.same, request.id),
  );
}
