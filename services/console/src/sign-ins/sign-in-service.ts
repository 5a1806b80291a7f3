import { CONSOLE_ACTS, OPERATOR_AGENT_ID, type AuditRecorder } from '@pcg/shared/audit';
import { openCredentials, sealCredentials } from '@pcg/shared/crypto';
import type { DatabasePool } from '@pcg/shared/db';
import { ConflictError, DomainError, ValidationError, type ErrorKind } from '@pcg/shared/errors';
import type { Logger } from '@pcg/shared/logger';
import { findProvider, listProviders, realOrigins, rebaserFor, SETUP_TOKEN_UNREADABLE, DemoEndpointsSchema, type DemoEndpoints, type ProviderDescriptor, type RebaseUrl } from '@pcg/shared/providers';
import { createAddressPolicy, DEFAULT_GATEWAY_PORTS, gatewayOwnPorts, type AddressPolicy } from '@pcg/shared/outbound';
import type { SignInJobResult, SignInRequester } from '@pcg/shared/queues';
import { createSignInQueries, providerAppContext, ProviderAppSchema, type ProviderApp } from '@pcg/shared/sign-ins';
import type { ConnectionView } from '../connections/connections-types.ts';
import { callbackPathOf } from '../providers/provider-views.ts';
import { createSignInStates, pkcePair } from './sign-in-state.ts';
import type { ClaimBody } from './sign-in-types.ts';

/** A callback whose state was not started in this browser, was already used, or is stale. */
export const SIGN_IN_STATE_REFUSED = 'this sign-in was not started in this browser, was already used, or has expired; start the sign-in again';

const HEADER_SAFE = /^[\x21-\x7e]+$/;

/** A refusal the operator can act on, of the kind the edge answers it as. */
export class SignInRefusedError extends DomainError {}

const REFUSAL_KIND: Record<Extract<SignInJobResult, { status: 'refused' }>['reason'], ErrorKind> = {
  no_sectors: 'unprocessable',
  other_account: 'conflict',
  provider_refused: 'invalid',
  unreachable: 'upstream',
  not_configured: 'conflict',
  token_refused: 'forbidden',
  already_claimed: 'conflict',
  address_refused: 'unprocessable',
  credential_refused: 'unprocessable',
};

export type SignInServiceDeps = {
  db: DatabasePool;
  redis: Parameters<typeof createSignInStates>[0];
  requester?: Pick<SignInRequester, 'exchange' | 'claim' | 'linkStart' | 'linkExchange'>;
  credentialsKey: Buffer;
  connectionViews(ids: readonly string[]): Promise<ConnectionView[]>;
  audit: AuditRecorder;
  log: Logger;
  /** Points a provider's real sign-in address at its configured stand-in (`<PROVIDER>_BASE_URL`); default none. */
  rebaseUrl?: RebaseUrl;
  /** The outbound policy for the setup token's claim address (issue 32); default with the gateway's default ports. */
  addressPolicy?: Pick<AddressPolicy, 'urlRefusal'>;
};

export type CallbackQuery = { code?: string; state?: string; error?: string };

/**
 * Provider sign-ins from the Console (design 7.1): the forms each provider's descriptor implies, the
 * provider's application credentials (write-only), and the OAuth authorization-code flow. The Console
 * never talks to the provider: the code exchange runs on the sync-worker and this awaits it.
 */
export function createSignInService(deps: SignInServiceDeps) {
  const states = createSignInStates(deps.redis);
  const addressPolicy = deps.addressPolicy ?? createAddressPolicy({ ownPorts: gatewayOwnPorts(DEFAULT_GATEWAY_PORTS) });

  function oauthProvider(kind: string): ProviderDescriptor & { oauth: NonNullable<ProviderDescriptor['oauth']> } {
    const provider = findProvider(kind);
    if (!provider) throw new ValidationError(`unknown provider '${kind}'; providers: ${listProviders().map((p) => p.kind).join(', ')}`);
    if (provider.signIn !== 'oauth' || !provider.oauth) throw new ConflictError(`${provider.displayName} does not sign in at the provider (sign-in kind '${provider.signIn}')`);
    return { ...provider, oauth: provider.oauth };
  }

  /** A provider that signs in at the provider's own page: an OAuth authorize page or an aggregator's hosted link. */
  function signInProvider(kind: string): ProviderDescriptor {
    const provider = findProvider(kind);
    if (!provider) throw new ValidationError(`unknown provider '${kind}'; providers: ${listProviders().map((p) => p.kind).join(', ')}`);
    if ((provider.signIn === 'oauth' && provider.oauth) || (provider.signIn === 'link' && provider.link)) return provider;
    throw new ConflictError(`${provider.displayName} does not sign in at the provider (sign-in kind '${provider.signIn}')`);
  }

  const record = (provider: string, outcome: 'ok' | 'error', args: Record<string, unknown>, requestId?: string) =>
    deps.audit.record({ agentId: OPERATOR_AGENT_ID, tool: CONSOLE_ACTS.signIn, sector: null, decision: 'allow', args: { provider, ...args }, outcome, requestId });

  return {
    /**
     * Seals and saves the provider's client id and secret (and, for a `link` provider, its environment,
     * which it requires); nothing of them is ever served back.
     */
    async saveApp(kind: string, app: ProviderApp, requestId?: string): Promise<void> {
      const audit = (outcome: 'ok' | 'error') =>
        deps.audit.record({ agentId: OPERATOR_AGENT_ID, tool: CONSOLE_ACTS.saveProviderApp, sector: null, decision: 'allow', args: { provider: kind }, outcome, requestId });
      try {
        const provider = signInProvider(kind);
        if (provider.signIn === 'link' && !app.environment) throw new ValidationError(`environment: ${provider.displayName} needs the environment of its application: sandbox or production`);
        // The aggregator's client id and secret travel as HTTP header values: visible ASCII only.
        if (provider.signIn === 'link' && !HEADER_SAFE.test(app.clientId + app.clientSecret)) throw new ValidationError(`${provider.displayName}'s client id and secret are printable ASCII without spaces; check what was pasted`);
        if (provider.signIn !== 'link' && app.environment) throw new ValidationError(`environment: ${provider.displayName} takes no environment`);
        await createSignInQueries(deps.db).saveApp(provider.kind, sealCredentials(deps.credentialsKey, app, providerAppContext(provider.kind)));
        deps.log.info({ provider: provider.kind }, 'provider application credentials saved');
        audit('ok');
      } catch (error) {
        audit('error');
        throw error;
      }
    },

    /**
     * Starts a sign-in: the authorize address with exactly the descriptor's scopes, PKCE S256 where the
     * provider takes it, and a state bound to this browser by the returned cookie nonce. `signInId`
     * renews that sign-in; `origin` is the Console's own, where the provider sends the browser back.
     * `demoEndpoints` (a demo's new sign-in, issue 42) sends this sign-in alone to those loopback stand-ins
     * and marks the sign-in it makes with them; never with `signInId`.
     */
    async start(kind: string, origin: string, signInId?: string, demoEndpoints?: DemoEndpoints): Promise<{ location: string; nonce: string }> {
      if (demoEndpoints) refuseDemoEndpoints(demoEndpoints, signInId);
      if (signInProvider(kind).signIn === 'link') return startLink(kind, origin, signInId, demoEndpoints);
      const provider = oauthProvider(kind);
      if ((await createSignInQueries(deps.db).sealedApp(provider.kind)) === null) {
        throw new ConflictError(`save ${provider.displayName}'s application credentials first: PUT /api/connect/${provider.kind}/app`);
      }
      const app = await appClientId(provider.kind);
      const redirectUri = `${origin}${callbackPathOf(provider.kind)}`;
      const pkce = provider.oauth.pkce ? pkcePair() : undefined;
      const { state, nonce } = await states.open({ provider: provider.kind, redirectUri, codeVerifier: pkce?.verifier, signInId, ...(demoEndpoints ? { demoEndpoints } : {}) });
      const url = new URL(rebaserFor(demoEndpoints, deps.rebaseUrl ?? realOrigins)(provider.oauth.authorizeUrl));
      const params: Record<string, string> = {
        ...provider.oauth.authorizeParams,
        response_type: 'code',
        client_id: app,
        redirect_uri: redirectUri,
        scope: provider.oauth.scopes.join(' '),
        state,
        ...(pkce ? { code_challenge: pkce.challenge, code_challenge_method: 'S256' } : {}),
      };
      for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
      return { location: url.toString(), nonce };
    },

    /**
     * A one-time setup token (the bank-link bridge). Without `confirmHost` nothing is sent anywhere: the
     * answer shows the host the token would be claimed at. With it, and only when it is that host, the
     * sync-worker claims the token once and creates the connection. Leaves a `sign_in` row when a claim
     * was asked for; its args never carry the token.
     */
    async claim(kind: string, body: ClaimBody, requestId?: string) {
      const provider = findProvider(kind);
      if (!provider) throw new ValidationError(`unknown provider '${kind}'; providers: ${listProviders().map((p) => p.kind).join(', ')}`);
      if (!provider.claim) throw new ConflictError(`${provider.displayName} takes no setup token`);
      const claimUrl = provider.claim.decode(body.setupToken);
      if (!claimUrl) throw new ValidationError(SETUP_TOKEN_UNREADABLE);
      const refusedAddress = addressPolicy.urlRefusal(claimUrl);
      if (refusedAddress) throw new ValidationError(`this setup token claims at ${claimUrl.host}, which was refused: ${refusedAddress}; nothing was sent: create a setup token at your bridge and paste that one`);
      const claimHost = claimUrl.host;
      const demoEndpoints = body.demo ? demoBridge(claimUrl) : undefined;
      if (body.confirmHost === undefined) return { status: 'confirm' as const, claimHost, https: claimUrl.protocol === 'https:' };
      if (body.confirmHost !== claimHost) throw new ConflictError(`this setup token claims at ${claimHost}; confirm that host to claim it`);
      if (!deps.requester) throw new SignInRefusedError('unavailable', 'queue_unavailable', 'sign-ins need the sync-worker, which is not connected');
      const result = await deps.requester.claim({
        provider: provider.kind,
        setupToken: body.setupToken,
        confirmHost: claimHost,
        ...(body.displayName ? { displayName: body.displayName } : {}),
        ...(body.syncIntervalMinutes ? { syncIntervalMinutes: body.syncIntervalMinutes } : {}),
        ...(demoEndpoints ? { demoEndpoints } : {}),
      });
      if (result.status === 'refused') {
        record(kind, 'error', { claimHost, refused: result.reason }, requestId);
        throw new SignInRefusedError(REFUSAL_KIND[result.reason], result.reason, result.message);
      }
      record(kind, 'ok', { claimHost, signInId: result.signInId, grantedSectors: result.grantedSectors }, requestId);
      return { status: 'signed_in' as const, signInId: result.signInId, claimHost, connections: await deps.connectionViews(result.connectionIds), ...(result.warning ? { warning: result.warning } : {}) };
    },

    /**
     * The provider sent the browser back. The state must be one this browser started, unused and fresh;
     * then the sync-worker exchanges the code and the granted scopes decide the connections. Leaves one
     * audit row, completed or refused; its args carry neither the code nor the state.
     */
    async callback(kind: string, query: CallbackQuery, nonce: string | undefined, requestId?: string) {
      const pending = await states.take(kind, query.state, nonce);
      if (!pending) {
        record(kind, 'error', { refused: 'state' }, requestId);
        throw new SignInRefusedError('invalid', 'sign_in_state_refused', SIGN_IN_STATE_REFUSED);
      }
      const renewing = pending.signInId !== undefined;
      if (pending.linkToken !== undefined) return finishLink(kind, pending.linkToken, pending.signInId, requestId, pending.demoEndpoints);
      if (query.error !== undefined || !query.code) {
        const reason = /^[\w.-]{1,64}$/.test(query.error ?? '') ? query.error : 'no_code';
        record(kind, 'error', { renewing, refused: 'provider_refused', providerError: reason }, requestId);
        throw new SignInRefusedError('invalid', 'provider_refused', `the provider did not grant the sign-in (${reason}); start it again`);
      }
      if (!deps.requester) throw new SignInRefusedError('unavailable', 'queue_unavailable', 'sign-ins need the sync-worker, which is not connected');
      const result = await deps.requester.exchange({
        provider: kind,
        code: query.code,
        codeVerifier: pending.codeVerifier,
        redirectUri: pending.redirectUri,
        signInId: pending.signInId,
        ...(pending.demoEndpoints ? { demoEndpoints: pending.demoEndpoints } : {}),
      });
      if (result.status === 'refused') {
        record(kind, 'error', { renewing, refused: result.reason }, requestId);
        throw new SignInRefusedError(REFUSAL_KIND[result.reason], result.reason, result.message);
      }
      record(kind, 'ok', { renewing, signInId: result.signInId, grantedSectors: result.grantedSectors, waiting: result.waiting }, requestId);
      return {
        status: 'signed_in' as const,
        signInId: result.signInId,
        renewed: result.renewed,
        connections: await deps.connectionViews(result.connectionIds),
        waiting: result.waiting,
      };
    },
  };

  /**
   * A hosted link (a `link` provider): the sync-worker asks the aggregator for one whose completion
   * sends the browser to the callback with this sign-in's state (bound to this browser by the cookie);
   * `signInId` opens it in update mode, to repair that sign-in's bank login.
   */
  /** A demo's stand-ins: a new sign-in's only, and none at one of the gateway's own ports (the outbound policy). */
  function refuseDemoEndpoints(demoEndpoints: DemoEndpoints, signInId: string | undefined): void {
    if (signInId) throw new ValidationError('a demo sign-in is always a new one: the demo mark is never added to an existing sign-in');
    for (const [name, origin] of Object.entries(demoEndpoints)) {
      const refusal = name.endsWith('_URL') && origin ? addressPolicy.urlRefusal(new URL(origin)) : undefined;
      if (refusal) throw new ValidationError(`endpoints: ${origin} was refused: ${refusal}`);
    }
  }

  /** A demo's bridge: an http origin on loopback only (the schema), at none of the gateway's own ports. */
  function demoBridge(claimUrl: URL): DemoEndpoints {
    const parsed = DemoEndpointsSchema.safeParse({ SIMPLEFIN_BRIDGE_URL: claimUrl.origin });
    if (!parsed.success) throw new ValidationError(`demo: a demo claim is for a bridge on this machine only (http on a loopback address), not ${claimUrl.host}`);
    refuseDemoEndpoints(parsed.data, undefined);
    return parsed.data;
  }

  async function startLink(kind: string, origin: string, signInId?: string, demoEndpoints?: DemoEndpoints): Promise<{ location: string; nonce: string }> {
    const provider = signInProvider(kind);
    if ((await createSignInQueries(deps.db).sealedApp(provider.kind)) === null) {
      throw new ConflictError(`save ${provider.displayName}'s application credentials first: PUT /api/connect/${provider.kind}/app`);
    }
    if (!deps.requester) throw new SignInRefusedError('unavailable', 'queue_unavailable', 'sign-ins need the sync-worker, which is not connected');
    const redirectUri = `${origin}${callbackPathOf(provider.kind)}`;
    const { state, nonce } = states.reserve();
    const started = await deps.requester.linkStart({ provider: provider.kind, completionRedirect: `${redirectUri}?state=${encodeURIComponent(state)}`, ...(signInId ? { signInId } : {}), ...(demoEndpoints ? { demoEndpoints } : {}) });
    if (started.status === 'refused') {
      record(kind, 'error', { renewing: signInId !== undefined, refused: started.reason });
      throw new SignInRefusedError(REFUSAL_KIND[started.reason], started.reason, started.message);
    }
    await states.open({ provider: provider.kind, redirectUri, linkToken: started.linkToken, signInId, ...(demoEndpoints ? { demoEndpoints } : {}) }, { state, nonce });
    return { location: started.hostedLinkUrl, nonce };
  }

  /** The browser came back from the hosted link: the sync-worker reads the session and seals the item's access token. */
  async function finishLink(kind: string, linkToken: string, signInId: string | undefined, requestId?: string, demoEndpoints?: DemoEndpoints) {
    const renewing = signInId !== undefined;
    if (!deps.requester) throw new SignInRefusedError('unavailable', 'queue_unavailable', 'sign-ins need the sync-worker, which is not connected');
    const result = await deps.requester.linkExchange({ provider: kind, linkToken, ...(signInId ? { signInId } : {}), ...(demoEndpoints ? { demoEndpoints } : {}) });
    if (result.status === 'refused') {
      record(kind, 'error', { renewing, refused: result.reason }, requestId);
      throw new SignInRefusedError(REFUSAL_KIND[result.reason], result.reason, result.message);
    }
    record(kind, 'ok', { renewing, signInId: result.signInId, grantedSectors: result.grantedSectors, waiting: result.waiting }, requestId);
    return {
      status: 'signed_in' as const,
      signInId: result.signInId,
      renewed: result.renewed,
      connections: await deps.connectionViews(result.connectionIds),
      waiting: result.waiting,
    };
  }

  /** The client id is not secret, but it is read only to build the authorize address, never served. */
  async function appClientId(kind: string): Promise<string> {
    const sealed = await createSignInQueries(deps.db).sealedApp(kind);
    if (!sealed) throw new ConflictError('the application credentials are missing');
    return ProviderAppSchema.parse(openCredentials(deps.credentialsKey, sealed, providerAppContext(kind))).clientId;
  }
}

export type SignInService = ReturnType<typeof createSignInService>;
