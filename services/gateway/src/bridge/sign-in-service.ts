import type { DatabasePool } from 'slonik';
import { hashAgentKey, type KeyResolver } from '@pcg/shared/grants';
import { withParams, type AuthorizationRequest } from './authorize-request.ts';
import type { BridgeEndpoints } from './bridge-endpoints.ts';
import { invalidClientMetadata, invalidRedirectUri } from './bridge-errors.ts';
import { createBridgeQueries } from './bridge-queries.ts';
import { generateBridgeSecret, generateClientId, hashBridgeSecret } from './bridge-secrets.ts';
import { ClientRegistrationSchema, echoedMetadata, registrationAnswer } from './client-registration.ts';

/** An authorization code is good for this long, once; default 2 minutes. */
export const CODE_LIFETIME_MS = 2 * 60 * 1000;
/** Registrations that never exchanged a code are removed after this long; default 7 days. */
export const UNUSED_CLIENT_LIFETIME_MS = 7 * 24 * 60 * 60 * 1000;

export type SignInOutcome =
  | { kind: 'approved'; location: string; agentName: string }
  | { kind: 'key-refused'; reason: string }
  | { kind: 'no-expiry'; agentName: string };

/** Client registration and the sign-in itself: the pasted key becomes a one-time code. */
export function createSignInService(deps: { db: DatabasePool; resolver: Pick<KeyResolver, 'resolveKey'>; now?: () => Date }) {
  const queries = createBridgeQueries(deps.db);
  const now = deps.now ?? (() => new Date());

  return {
    findClient: queries.findClient,

    /** RFC 7591 registration of a public client; throws `invalid_client_metadata` or `invalid_redirect_uri`. */
    async register(body: unknown) {
      const parsed = ClientRegistrationSchema.safeParse(body);
      if (!parsed.success) {
        const messages = parsed.error.issues.map((issue) => issue.message);
        const redirect = messages.find((message) => message.startsWith('redirect_uris:'));
        throw redirect ? invalidRedirectUri(redirect) : invalidClientMetadata(messages.join('; '));
      }
      // Bounded storage: clients register afresh on every connection, and most registrations are never used.
      await queries.reapUnusedClients(UNUSED_CLIENT_LIFETIME_MS);
      const client = await queries.insertClient({
        id: generateClientId(),
        clientName: parsed.data.client_name ?? null,
        redirectUris: parsed.data.redirect_uris,
        metadata: echoedMetadata(parsed.data),
      });
      return registrationAnswer(client);
    },

    /**
     * The key pasted into the form: refused keys and keys that never expire get no code (spec 5 rule 1).
     * The code is bound to the client, the redirect URI, the PKCE challenge, the resource, and the key.
     */
    async approve(request: AuthorizationRequest, key: string, endpoints: BridgeEndpoints): Promise<SignInOutcome> {
      const resolved = await deps.resolver.resolveKey(key, now());
      if (!resolved.ok) return { kind: 'key-refused', reason: resolved.reason };
      if (resolved.grant.expiresAt === null) return { kind: 'no-expiry', agentName: resolved.grant.agentName };
      const code = generateBridgeSecret('code');
      await queries.insertCode({
        codeHash: hashBridgeSecret(code),
        clientId: request.clientId,
        agentId: resolved.grant.agentId,
        agentKeyHash: hashAgentKey(key),
        redirectUri: request.redirectUri,
        codeChallenge: request.codeChallenge,
        resource: request.resource,
        scope: request.scope,
        ttlMs: CODE_LIFETIME_MS,
      });
      await queries.pruneExpired();
      return {
        kind: 'approved',
        agentName: resolved.grant.agentName,
        location: withParams(request.redirectUri, { code, state: request.state, iss: endpoints.issuer }),
      };
    },
  };
}

export type SignInService = ReturnType<typeof createSignInService>;
