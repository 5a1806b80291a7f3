import { mcpResourceOf } from '@pcg/shared/settings';

/** The bridge addresses of spec 4.3 besides /mcp. */
export const BRIDGE_PATHS = {
  protectedResource: '/.well-known/oauth-protected-resource',
  protectedResourceMcp: '/.well-known/oauth-protected-resource/mcp',
  authorizationServer: '/.well-known/oauth-authorization-server',
  authorize: '/authorize',
  token: '/token',
  register: '/register',
} as const;

/** Spec 4.3 and 8: access tokens live 3600 seconds. */
export const ACCESS_TOKEN_SECONDS = 3600;
export const GRANT_TYPES = ['authorization_code', 'refresh_token'] as const;

/**
 * Every public URL of the bridge, built from the saved origin only: never from a request's Host or
 * forwarding headers, which a proxy or a caller controls. The resource is the URL agents connect to.
 */
export type BridgeEndpoints = {
  origin: string;
  /** `<origin>/mcp`: the protected resource, the token audience, and the URL clients are given. */
  resource: string;
  /** The authorization server's issuer: the origin itself, so the SDK's issuer echo check holds. */
  issuer: string;
  /** The path-aware protected-resource document, named in every 401 challenge. */
  protectedResourceMetadata: string;
};

export function bridgeEndpoints(origin: string): BridgeEndpoints {
  return {
    origin,
    resource: mcpResourceOf(origin),
    issuer: origin,
    protectedResourceMetadata: `${origin}${BRIDGE_PATHS.protectedResourceMcp}`,
  };
}

/**
 * RFC 8414 metadata advertising exactly the values of spec 4.3. No field is ever null: SDK-based clients
 * validate these documents and fail on a null. `iss` is sent in authorization responses (RFC 9207).
 */
export function authorizationServerMetadata(endpoints: BridgeEndpoints) {
  return {
    issuer: endpoints.issuer,
    authorization_endpoint: `${endpoints.origin}${BRIDGE_PATHS.authorize}`,
    token_endpoint: `${endpoints.origin}${BRIDGE_PATHS.token}`,
    registration_endpoint: `${endpoints.origin}${BRIDGE_PATHS.register}`,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: [...GRANT_TYPES],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    authorization_response_iss_parameter_supported: true,
  };
}

/** RFC 9728 metadata; the same document at both spec paths. It holds no data. */
export function protectedResourceMetadata(endpoints: BridgeEndpoints, serviceName: string) {
  return {
    resource: endpoints.resource,
    authorization_servers: [endpoints.issuer],
    bearer_methods_supported: ['header'],
    resource_name: serviceName,
  };
}

const quoted = (value: string) => `"${value.replace(/["\\]/g, '\\$&')}"`;

/**
 * The 401 challenge of spec 5 rule 4 (RFC 6750 3, RFC 9728 5.1). With no credential presented it carries
 * no error code (RFC 6750 3.1); a refused credential gets `invalid_token`.
 */
export function bearerChallenge(endpoints: BridgeEndpoints, refused?: { description: string }): string {
  const parts = refused ? [`error=${quoted('invalid_token')}`, `error_description=${quoted(refused.description)}`] : [];
  parts.push(`resource_metadata=${quoted(endpoints.protectedResourceMetadata)}`);
  return `Bearer ${parts.join(', ')}`;
}
