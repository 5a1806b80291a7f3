import { isPgText, PG_VALUE_RULES } from '@pcg/shared/validation';
import type { BridgeEndpoints } from './bridge-endpoints.ts';
import { BRIDGE_MESSAGES } from './bridge-errors.ts';
import type { ClientRow } from './bridge-queries.ts';
import { S256_CHALLENGE_PATTERN } from './bridge-secrets.ts';
import { LOOPBACK_HOST, redirectUriProblem } from './client-registration.ts';

/** The parameters of an authorization request (RFC 6749 4.1.1, RFC 7636 4.3, RFC 8707 2), as sent. */
export const AUTHORIZE_PARAMS = ['response_type', 'client_id', 'redirect_uri', 'state', 'scope', 'code_challenge', 'code_challenge_method', 'resource'] as const;
export type AuthorizeParams = Partial<Record<(typeof AUTHORIZE_PARAMS)[number], string>>;

/** A checked request: everything a code will be bound to. */
export type AuthorizationRequest = {
  clientId: string;
  redirectUri: string;
  codeChallenge: string;
  state: string | null;
  scope: string | null;
  /** Always the bridge's own resource, whichever accepted spelling the client sent. */
  resource: string;
};

export type AuthorizeCheck =
  | { kind: 'ok'; request: AuthorizationRequest; client: ClientRow }
  /** The client or its address cannot be trusted: no redirect (RFC 6749 4.1.2.1); one of spec 6's cheap refusals. */
  | { kind: 'refused'; message: string; denial: string }
  /** The client is known and the address registered: the error goes back to it. */
  | { kind: 'redirect'; location: string };

const MAX_PARAM_LENGTH = 2000;

/** Exact match, except that a loopback http address may use another port (RFC 8252 7.3). */
export function redirectUriRegistered(requested: string, registered: readonly string[]): boolean {
  if (registered.includes(requested)) return true;
  if (!URL.canParse(requested)) return false;
  const asked = new URL(requested);
  if (asked.protocol !== 'http:' || !LOOPBACK_HOST.test(asked.hostname) || redirectUriProblem(requested) !== null) return false;
  return registered.some((uri) => {
    if (!URL.canParse(uri)) return false;
    const known = new URL(uri);
    return known.protocol === 'http:' && known.hostname === asked.hostname && known.pathname === asked.pathname && known.search === asked.search;
  });
}

/** The spellings of our resource a client may send (RFC 8707): the /mcp URL or the origin, with or without a slash. */
export function resourceMatches(requested: string, endpoints: BridgeEndpoints): boolean {
  const trimmed = requested.endsWith('/') ? requested.slice(0, -1) : requested;
  return trimmed === endpoints.resource || trimmed === endpoints.origin;
}

/** `uri` with the parameters added to its query (RFC 6749 3.1.2: an existing query is kept). */
export function withParams(uri: string, params: Record<string, string | null | undefined>): string {
  const url = new URL(uri);
  for (const [name, value] of Object.entries(params)) if (value !== null && value !== undefined) url.searchParams.set(name, value);
  return url.toString();
}

/**
 * Checks an authorization request in the order RFC 6749 4.1.2.1 requires: the client and its redirect
 * address first (never redirect to an address we cannot vouch for), then the rest, whose errors go back
 * to the client with its `state` and our `iss` (RFC 9207).
 */
export async function checkAuthorizeRequest(
  params: AuthorizeParams,
  deps: { findClient(id: string): Promise<ClientRow | null>; endpoints: BridgeEndpoints },
): Promise<AuthorizeCheck> {
  const tooLong = AUTHORIZE_PARAMS.find((name) => (params[name]?.length ?? 0) > MAX_PARAM_LENGTH);
  // Text Postgres cannot hold matches no client and must never reach the lookup or the stored code.
  const unstorable = AUTHORIZE_PARAMS.find((name) => params[name] !== undefined && !isPgText(params[name]));
  if (unstorable === 'client_id' || unstorable === 'redirect_uri') {
    return { kind: 'refused', message: `${unstorable} ${PG_VALUE_RULES.text}.`, denial: 'authorize: malformed request' };
  }
  if (!params.client_id) return { kind: 'refused', message: 'client_id is missing from the sign-in address.', denial: 'authorize: unknown client' };
  const client = tooLong === 'client_id' ? null : await deps.findClient(params.client_id);
  if (!client) return { kind: 'refused', message: BRIDGE_MESSAGES.unknownClient, denial: 'authorize: unknown client' };

  let redirectUri = params.redirect_uri;
  if (redirectUri === undefined) {
    if (client.redirectUris.length !== 1) {
      return { kind: 'refused', message: 'redirect_uri is missing, and this client registered more than one.', denial: 'authorize: redirect_uri mismatch' };
    }
    redirectUri = client.redirectUris[0] as string;
  } else if (!redirectUriRegistered(redirectUri, client.redirectUris)) {
    return { kind: 'refused', message: BRIDGE_MESSAGES.redirectMismatch, denial: 'authorize: redirect_uri mismatch' };
  }

  const state = params.state ?? null;
  const back = (error: string, description: string): AuthorizeCheck => ({
    kind: 'redirect',
    location: withParams(redirectUri, { error, error_description: description, state, iss: deps.endpoints.issuer }),
  });
  if (tooLong) return back('invalid_request', `${tooLong} is longer than ${MAX_PARAM_LENGTH} characters`);
  if (unstorable) return back('invalid_request', `${unstorable} ${PG_VALUE_RULES.text}`);
  if (params.response_type !== 'code') return back('unsupported_response_type', "response_type must be 'code'");
  if (params.code_challenge_method !== 'S256') return back('invalid_request', BRIDGE_MESSAGES.challengeMethod);
  if (!params.code_challenge || !S256_CHALLENGE_PATTERN.test(params.code_challenge)) {
    return back('invalid_request', 'code_challenge must be the base64url SHA-256 of the code verifier (43 characters)');
  }
  if (params.resource !== undefined && !resourceMatches(params.resource, deps.endpoints)) {
    return back('invalid_target', `resource must be ${deps.endpoints.resource}`);
  }
  return {
    kind: 'ok',
    client,
    request: {
      clientId: client.id,
      redirectUri,
      codeChallenge: params.code_challenge,
      state,
      scope: params.scope ?? null,
      resource: deps.endpoints.resource,
    },
  };
}
