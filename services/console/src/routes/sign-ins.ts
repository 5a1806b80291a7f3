import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { DatabasePool } from '@pcg/shared/db';
import { findProvider } from '@pcg/shared/providers';
import { createSignInQueries, type SignInWithConnections } from '@pcg/shared/sign-ins';

const SignInViewSchema = z.object({
  id: z.string(),
  provider: z.string(),
  providerName: z.string(),
  signIn: z.enum(['token', 'push', 'oauth', 'link']),
  status: z.enum(['active', 'needs_sign_in']),
  grantedScopes: z.array(z.string()),
  /** The provider's own account id, as it reported it; null for a pasted token. */
  accountId: z.string().nullable(),
  lastRefreshedAt: z.string().nullable(),
  lastError: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
  /** The connections it holds, one per sector. */
  connections: z.array(z.object({ id: z.string(), sector: z.string(), displayName: z.string(), status: z.string() })),
});

function view(row: SignInWithConnections): z.infer<typeof SignInViewSchema> {
  const provider = findProvider(row.provider);
  return {
    id: row.id,
    provider: row.provider,
    providerName: provider?.displayName ?? row.provider,
    signIn: provider?.signIn ?? 'token',
    status: row.status,
    grantedScopes: row.granted_scopes,
    accountId: row.account_id,
    lastRefreshedAt: row.last_refreshed_at,
    lastError: row.last_error,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    connections: row.connections.map((connection) => ({ id: connection.id, sector: connection.sector, displayName: connection.display_name, status: connection.status })),
  };
}

/**
 * `GET /api/sign-ins`: every sign-in by provider, with the connections it holds, its status and its last
 * refresh (design 7.1); never a credential. Behind the Host check; a read, not recorded.
 */
export function registerSignInRoutes(app: FastifyInstance, { db }: { db: DatabasePool }): void {
  app
    .withTypeProvider<ZodTypeProvider>()
    .get('/api/sign-ins', { schema: { response: { 200: z.object({ signIns: z.array(SignInViewSchema) }) } } }, async () => ({
      signIns: (await createSignInQueries(db).listWithConnections()).map(view),
    }));
}
