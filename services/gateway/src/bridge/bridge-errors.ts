/** Texts the specification fixes, and the bridge's own; the code and the tests both use these. */
export const BRIDGE_MESSAGES = {
  /** Spec 7, word for word. */
  challengeMethod: "code_challenge_method must be 'S256' (plain is not accepted)",
  /** Spec 5 rule 1 and spec 7: the key never expires and cloud clients need an expiry. */
  keyHasNoExpiry:
    'This agent key never expires. Keys used with a cloud client must have an expiry of 30, 90 or 365 days: give the agent an expiry in the Console, then sign in again.',
  keyRefused: (reason: string) => `This agent key was refused (${reason}). Paste the key of an active agent, or create one in the Console.`,
  staleForm: 'This sign-in form has expired. Start the connection again from your client.',
  unknownClient: 'This client is not registered here. Start the connection again from your client so that it registers.',
  redirectMismatch: 'redirect_uri is not one of the addresses this client registered.',
} as const;

/** Deny reasons of the audit rows spec 6 names for sign-in refusals, word for word. */
export const SIGN_IN_DENIALS = {
  keyRefused: 'authorize: key refused',
  keyHasNoExpiry: 'authorize: key has no expiry',
} as const;

/**
 * How a refusal is recorded (spec 6): `cheap` ones (unknown client, mismatched address, stale form, a
 * guessed code or token) go through the shared refusal throttle; the others are written at any rate.
 */
export type Denial = { reason: string; cheap: boolean; agentName?: string };

/** An OAuth error answer (RFC 6749 5.2, RFC 7591 3.2.2): `{error, error_description}` with a status. */
export class OAuthError extends Error {
  readonly status: number;
  readonly error: string;
  denial: Denial | undefined;

  constructor(status: number, error: string, description: string) {
    super(description);
    this.name = 'OAuthError';
    this.status = status;
    this.error = error;
  }

  /** Marks the refusal for the audit record. */
  recorded(denial: Denial): this {
    this.denial = denial;
    return this;
  }

  toBody(): { error: string; error_description: string } {
    return { error: this.error, error_description: this.message };
  }
}

export const invalidRequest = (description: string) => new OAuthError(400, 'invalid_request', description);
export const invalidGrant = (description: string) => new OAuthError(400, 'invalid_grant', description);
export const invalidClient = (description: string) => new OAuthError(401, 'invalid_client', description);
export const invalidTarget = (description: string) => new OAuthError(400, 'invalid_target', description);
export const invalidClientMetadata = (description: string) => new OAuthError(400, 'invalid_client_metadata', description);
export const invalidRedirectUri = (description: string) => new OAuthError(400, 'invalid_redirect_uri', description);
export const unsupportedGrantType = (description: string) => new OAuthError(400, 'unsupported_grant_type', description);
