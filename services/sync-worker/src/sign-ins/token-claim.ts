import type { Job } from 'bullmq';
import { sealCredentials, secretDigest } from '@pcg/shared/crypto';
import { sql, type DatabasePool } from '@pcg/shared/db';
import type { Logger } from '@pcg/shared/logger';
import { AddressRefusedError, type Outbound } from '@pcg/shared/outbound';
import { bridgeAddressRefusal, findProvider } from '@pcg/shared/providers';
import type { CredentialCheckResult } from '@pcg/shared/connections';
import type { SignInJobResult, SyncProducer, TokenClaimJob } from '@pcg/shared/queues';
import { applyGrant } from '@pcg/shared/sign-ins';
import { z } from 'zod';

export type TokenClaimDeps = {
  db: DatabasePool;
  credentialsKey: Buffer;
  sync: Pick<SyncProducer, 'schedule'>;
  log: Logger;
  requestTimeoutMs: number;
  /** A loopback bridge over http is accepted (the local test bridge); default false. */
  allowLoopback: boolean;
  /** The outbound policy (issue 32): the claim and access addresses are checked, resolved, and dialled through it. */
  outbound: Pick<Outbound, 'checkUrl' | 'fetch'>;
  /** The connection check's credential step (issue 32), run on the access before it is saved; absent, not run. */
  checkCredentials?: (provider: string, credentials: unknown, budgetMs: number) => Promise<CredentialCheckResult>;
};

type Refused = Extract<SignInJobResult, { status: 'refused' }>;
const refused = (reason: Refused['reason'], message: string): Refused => ({ status: 'refused', reason, message });

/** Reference §2.1: a 403 to a claim means the token is unknown or was claimed already — possibly by someone else. */
export const SETUP_TOKEN_REFUSED =
  'the bridge refused this setup token: it is unknown or has already been claimed. If you did not claim it yourself, someone else may have: treat it as a possible compromise, revoke its access at the bridge and create a new setup token';
export const SETUP_TOKEN_USED =
  'this setup token was claimed by this gateway before; a setup token works once, so it is never sent again: create a new one at the bridge';
const CLAIM_UNANSWERED =
  'the bridge did not answer the claim; the token may or may not have been used, so it will not be sent again: check the bridge and create a new setup token';

/** Why the outbound policy refused an address (its reason), or undefined when it passed; other failures are left to the claim. */
async function outboundRefusal(check: () => Promise<void>): Promise<string | undefined> {
  try {
    await check();
    return undefined;
  } catch (error) {
    return error instanceof AddressRefusedError ? error.reason : undefined;
  }
}

/**
 * Claims a bank-link bridge setup token once (reference §2.1, design 7.1). The token's SHA-256 is
 * recorded before the claim is sent, so a token is never claimed twice, even when the claim's answer is
 * lost. The access URL that comes back is checked (https, or the allowed loopback double) and sealed on a
 * new sign-in with its one finance connection before this job answers; it appears in no log and no answer.
 */
export function createTokenClaimRunner(deps: TokenClaimDeps) {
  return async function runClaim(job: Job, data: TokenClaimJob): Promise<SignInJobResult> {
    const log = deps.log.child({ jobId: job.id, provider: data.provider });
    const provider = findProvider(data.provider);
    if (!provider?.claim) return refused('not_configured', `'${data.provider}' takes no setup token`);
    if (Date.now() > data.deadline) return refused('unreachable', 'the claim expired before the sync-worker took it; the token was not sent');
    // The local test bridge by setting, or a demo's bridge at the one origin its claim was marked with (issue 42).
    const loopbackAllowed = (url: URL) => deps.allowLoopback || data.demoEndpoints?.SIMPLEFIN_BRIDGE_URL === url.origin;
    const claimUrl = provider.claim.decode(data.setupToken);
    if (!claimUrl) return refused('address_refused', 'the setup token does not decode to a claim address');
    if (claimUrl.host !== data.confirmHost) return refused('address_refused', `the setup token claims at ${claimUrl.host}, not at the host that was confirmed`);
    const addressRefusal = bridgeAddressRefusal(claimUrl, loopbackAllowed(claimUrl));
    if (addressRefusal) return refused('address_refused', `the claim address was refused: ${addressRefusal}`);
    // Before the token is recorded as used: a refused address is refused without spending the token.
    const policyRefusal = await outboundRefusal(() => deps.outbound.checkUrl(claimUrl));
    if (policyRefusal) return refused('address_refused', `the claim address was refused: ${policyRefusal}; the token was not sent`);

    const tokenHash = secretDigest(data.setupToken.trim());
    const first = await deps.db.maybeOneFirst(sql.type(z.object({ ok: z.boolean() }))`
      INSERT INTO setup_token_claims (token_hash, provider, claim_host) VALUES (${sql.binary(tokenHash)}, ${provider.kind}, ${claimUrl.host})
      ON CONFLICT (token_hash) DO NOTHING RETURNING true AS ok`);
    if (!first) return refused('already_claimed', SETUP_TOKEN_USED);

    let response: Response;
    try {
      response = await deps.outbound.fetch(claimUrl, { method: 'POST', redirect: 'manual', signal: AbortSignal.timeout(deps.requestTimeoutMs) });
    } catch (error) {
      // The name now resolves somewhere else than when it was checked: nothing was sent, but the token is spent.
      if (error instanceof AddressRefusedError) return refused('address_refused', `${error.message}; the token was not sent, but it will not be sent again: create a new one`);
      return refused('unreachable', CLAIM_UNANSWERED);
    }
    const text = await response.text().catch(() => '');
    if (response.status === 403) {
      log.warn({ claimHost: claimUrl.host }, 'the bridge refused a setup token');
      return refused('token_refused', SETUP_TOKEN_REFUSED);
    }
    if (response.status !== 200) return refused('unreachable', `the bridge answered the claim with HTTP ${response.status}; the token will not be sent again: create a new one`);
    let accessUrl: URL;
    try {
      accessUrl = new URL(text.trim());
    } catch {
      return refused('address_refused', 'the bridge answered the claim with something that is not an access address');
    }
    const accessRefusal =
      bridgeAddressRefusal(accessUrl, loopbackAllowed(accessUrl)) ??
      (accessUrl.username && accessUrl.password ? undefined : 'it carries no user name and password') ??
      (await outboundRefusal(() => deps.outbound.checkUrl(accessUrl)));
    if (accessRefusal) return refused('address_refused', `the access address the bridge returned was refused: ${accessRefusal}`);
    // Checked at connect (issue 32): an access the bridge refuses is not saved; one it could not be asked with is, with a warning.
    const checked = await deps.checkCredentials?.(provider.kind, { accessUrl: accessUrl.toString() }, Math.max(1, Math.min(deps.requestTimeoutMs, data.deadline - Date.now())));
    if (checked?.outcome === 'refused') return refused('credential_refused', `${checked.message}; nothing was saved`);
    const warning = checked?.outcome === 'unreachable' ? checked.message : undefined;

    const outcome = await applyGrant(deps.db, {
      provider: { ...provider, displayName: data.displayName ?? provider.displayName },
      accountId: null,
      grantedScopes: [],
      sectors: [...provider.sectors],
      ...(data.demoEndpoints ? { demoEndpoints: data.demoEndpoints } : {}),
      seal: (signInId) => sealCredentials(deps.credentialsKey, { accessUrl: accessUrl.toString() }, signInId),
    });
    if (outcome.outcome === 'refused') return refused('provider_refused', outcome.message);
    for (const connection of outcome.active) {
      const minutes = data.syncIntervalMinutes ?? connection.sync_interval_minutes ?? provider.defaultSyncIntervalMinutes ?? 360;
      await deps.sync.schedule(connection.id, minutes).catch((error: unknown) => log.warn({ err: error, connectionId: connection.id }, 'could not schedule the new connection; the reconciler will'));
    }
    log.info({ signInId: outcome.signInId, claimHost: claimUrl.host }, 'setup token claimed');
    return {
      status: 'signed_in',
      signInId: outcome.signInId,
      renewed: false,
      connectionIds: outcome.active.map((connection) => connection.id),
      grantedSectors: [...provider.sectors],
      waiting: [],
      ...(warning ? { warning } : {}),
    };
  };
}
