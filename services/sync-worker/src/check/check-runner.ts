import type { Job } from 'bullmq';
import { checkAnswer, type CheckStep, type CredentialCheckResult } from '@pcg/shared/connections';
import { openCredentials } from '@pcg/shared/crypto';
import { createOriginRebaser, findProvider, type DemoEndpoints } from '@pcg/shared/providers';
import { demoICloudOptions } from '../connectors/icloud/icloud-local-override.ts';
import type { ConnectionCheckJob, CredentialCheckJob, LiveJobResult } from '@pcg/shared/queues';
import type { CacheWriter, ConnectorContext } from '../connectors/connector-types.ts';
import { createSourceClient } from '../connectors/kit/source-client.ts';
import { SourceAuthError, SourceRateLimitedError, SourceRejectedError, SourceTokenExpiredError } from '../connectors/kit/source-errors.ts';
import { buildConnectorContext } from '../run/connector-context.ts';
import { OAuthCredentialsSchema } from '../sign-ins/oauth-client.ts';
import type { SyncRunnerDeps } from '../sync/sync-runner.ts';
import { createCheckProbe, type CheckProbe } from './check-probe.ts';
import { CheckCredentialsError, checkPlans, type CheckEndpoint, type CheckPlan, type CheckPlanOptions } from './check-plans.ts';
import { clockStep, describeReadFailure, failed, grants, passed, rateLimitStep } from './check-steps.ts';

export type CheckRunnerDeps = Pick<SyncRunnerDeps, 'store' | 'credentialsKey' | 'log' | 'requestTimeoutMs' | 'refreshCredentials'> &
  CheckPlanOptions & {
    /** What carries a request to an address the operator or a source gave: the outbound policy's fetch (issue 32), as the connector's own reads. */
    givenAddressFetch?: typeof fetch;
  };

/** The check never writes the cache: a connector context for it holds a writer that refuses. */
const NO_CACHE: CacheWriter & { counts: { written: number; removed: number } } = {
  counts: { written: 0, removed: 0 },
  upsert: () => Promise.reject(new Error('the connection check writes no cached data')),
  sourceIds: () => Promise.reject(new Error('the connection check reads no cached data')),
  idsOf: () => Promise.reject(new Error('the connection check reads no cached data')),
  remove: () => Promise.reject(new Error('the connection check writes no cached data')),
};

const OPEN_TITLE = 'The stored credentials open';
const TOKEN_TITLE = 'The access token is valid';
const SCOPES_TITLE = 'The provider granted the permissions this connection reads with';
/** A token this close to its expiry is refreshed first, as a sync would. */
const TOKEN_DUE_MS = 60_000;

/**
 * The sync-worker's side of the connection check (issue 32, design 8.2): the connector's own steps
 * against the source with a budget of requests and time, through the same source client, classifier
 * and token refresh a sync uses; nothing is cached and nothing on the connection changes (a token due
 * for refresh is refreshed through the sign-ins' refresher, which saves it as a sync would). Every job
 * completes with an answer; it never throws, so it is never retried.
 */
export function createCheckRunner(deps: CheckRunnerDeps) {
  const plans = checkPlans(deps);
  /** A demo sign-in's connection is checked at its own stand-ins (issue 42). */
  const planOf = (provider: string, demoEndpoints: DemoEndpoints | null | undefined): CheckPlan | undefined =>
    demoEndpoints ? checkPlans({ ...deps, rebaseUrl: createOriginRebaser(demoEndpoints), icloud: demoICloudOptions(demoEndpoints) })[provider] : plans[provider];

  function clientFor(plan: CheckPlan, probe: CheckProbe, startedAt: number) {
    return createSourceClient({
      what: plan.what,
      classifier: plan.classifier,
      timeoutMs: Math.max(1, Math.min(deps.requestTimeoutMs, probe.remainingMs(startedAt))),
      signal: probe.signal,
      maxRedirects: plan.maxRedirects,
      fetch: probe.fetch,
    });
  }

  async function tokenStep(context: ConnectorContext, probe: CheckProbe, plan: CheckPlan): Promise<CheckStep> {
    const token = OAuthCredentialsSchema.safeParse(context.credentials);
    if (!token.success) return failed('token', TOKEN_TITLE, `the stored sign-in holds no usable token: ${plan.credentialFix}`);
    const { expiresAt } = token.data;
    if (expiresAt === null) return passed('token', TOKEN_TITLE, `${plan.name} gave the token no expiry`);
    if (expiresAt - Date.now() > TOKEN_DUE_MS) return passed('token', TOKEN_TITLE, `valid until ${new Date(expiresAt).toISOString()}`);
    probe.countOne();
    try {
      await context.refreshToken();
    } catch (error) {
      if (error instanceof SourceAuthError) return failed('token', TOKEN_TITLE, `the token had expired and ${plan.name} refused to renew it (${error.message}): ${plan.credentialFix}`);
      return failed('token', TOKEN_TITLE, `the token had expired and could not be renewed now: ${describeReadFailure(error, plan)}`);
    }
    const renewed = OAuthCredentialsSchema.safeParse(context.credentials).data?.expiresAt;
    return passed('token', TOKEN_TITLE, `it had expired and was renewed through the sign-in's refresh${renewed ? `; valid until ${new Date(renewed).toISOString()}` : ''}`);
  }

  function scopesStep(context: ConnectorContext, endpoints: readonly CheckEndpoint[], plan: CheckPlan): { step: CheckStep; missing: Set<string> } {
    const needed = [...new Set(endpoints.flatMap((endpoint) => (endpoint.scope ? [endpoint.scope] : [])))];
    const granted = OAuthCredentialsSchema.safeParse(context.credentials).data?.scopes;
    if (granted === undefined) return { step: passed('scopes', SCOPES_TITLE, `${plan.name} did not say at sign-in which permissions it granted; the reads below show what it allows`), missing: new Set() };
    const missing = needed.filter((scope) => !grants(granted, scope));
    if (missing.length === 0) return { step: passed('scopes', SCOPES_TITLE, `${plan.name} granted ${needed.join(', ') || 'what this connection needs'}`), missing: new Set() };
    const permissions = [...new Set(endpoints.filter((endpoint) => endpoint.scope && missing.includes(endpoint.scope)).map((endpoint) => endpoint.permission ?? endpoint.scope))];
    const message = `${plan.name} did not grant ${missing.join(', ')}: sign in again and accept the ${permissions.join(' and ')} permission${permissions.length > 1 ? 's' : ''}`;
    return { step: failed('scopes', SCOPES_TITLE, message), missing: new Set(missing) };
  }

  async function runConnectionCheck(job: Job, data: ConnectionCheckJob, _token?: string, signal?: AbortSignal): Promise<LiveJobResult> {
    if (data.deadline <= Date.now()) return { status: 'failed', message: 'the check expired before a worker took it' };
    const row = await deps.store.load(data.connectionId);
    if (!row) return { status: 'failed', message: 'the connection no longer exists' };
    const log = deps.log.child({ connectionId: row.id, provider: row.provider, jobId: job.id, kind: 'check_connection' });
    const startedAt = Date.now();
    const steps: CheckStep[] = [];
    // A demo connection is checked at its sign-in's stand-ins (issue 42).
    const plan = planOf(row.provider, row.demo_endpoints);
    const probe = createCheckProbe({ signal, transport: plan?.givenAddress ? deps.givenAddressFetch : plan?.transport });
    const done = (): LiveJobResult => {
      log.info({ requests: probe.requests(), failedSteps: steps.filter((step) => !step.passed).map((step) => step.step) }, 'connection checked');
      return { status: 'answered', value: checkAnswer(steps, probe.requests()) };
    };
    const fix = plan?.credentialFix ?? 'enter the credentials again, or sign in again';

    let context: ConnectorContext;
    try {
      context = buildConnectorContext({ store: { cacheWriter: () => NO_CACHE }, credentialsKey: deps.credentialsKey, refreshCredentials: deps.refreshCredentials }, row, {
        signal: probe.signal,
        requestTimeoutMs: deps.requestTimeoutMs,
        log,
      });
    } catch {
      steps.push(failed('credentials', OPEN_TITLE, `the stored credentials cannot be opened with this gateway's credentials key (was CREDENTIALS_KEY changed?): ${fix}`));
      return done();
    }
    if (context.credentials === null) {
      steps.push(failed('credentials', OPEN_TITLE, `no credentials are stored for this connection: ${fix}`));
      return done();
    }
    if (!plan) {
      steps.push(passed('credentials', OPEN_TITLE, "the stored credentials open with this gateway's key"));
      steps.push(failed('source', 'The source answers', `this check cannot ask ${findProvider(row.provider)?.displayName ?? row.provider}: run Sync now and read the connection's last error`));
      return done();
    }

    let endpoints: CheckEndpoint[];
    try {
      endpoints = await plan.endpoints(context.credentials, context.connection);
    } catch (error) {
      if (!(error instanceof CheckCredentialsError)) throw error;
      steps.push(failed('credentials', OPEN_TITLE, error.message));
      return done();
    }
    steps.push(passed('credentials', OPEN_TITLE, "the stored credentials open with this gateway's key"));
    let refreshed = false;
    if (plan.oauth) {
      const token = await tokenStep(context, probe, plan);
      steps.push(token);
      refreshed = probe.requests() > 0;
      // A renewed token is in the context: the reads use it.
      if (refreshed && token.passed) endpoints = await plan.endpoints(context.credentials, context.connection);
    }
    const missing = plan.oauth ? scopesStep(context, endpoints, plan) : undefined;
    if (missing) steps.push(missing.step);

    let limited: SourceRateLimitedError | undefined;
    // By index: a refresh rebuilds `endpoints` with the renewed token, and the later reads use it.
    for (let index = 0; index < endpoints.length; index += 1) {
      const endpoint = endpoints[index];
      if (!endpoint) continue;
      if (endpoint.scope && missing?.missing.has(endpoint.scope)) {
        steps.push(failed(endpoint.step, endpoint.title, `not asked: ${plan.name} did not grant ${endpoint.scope}; sign in again and accept the ${endpoint.permission ?? endpoint.scope} permission`));
        continue;
      }
      if (probe.timedOut()) {
        steps.push(failed(endpoint.step, endpoint.title, "not asked: the check's 20 s ran out; check again when the source answers faster"));
        continue;
      }
      if (probe.spent()) {
        steps.push(failed(endpoint.step, endpoint.title, `not asked: the check's budget of ${probe.maxRequests} requests was spent`));
        continue;
      }
      const ask = (target: CheckEndpoint) =>
        target.read
          ? target.read(probe, Math.max(1, Math.min(deps.requestTimeoutMs, probe.remainingMs(startedAt))))
          : clientFor(plan, probe, startedAt).send(target.url, { method: target.method, body: target.body, auth: target.auth, headers: target.headers });
      try {
        try {
          await ask(endpoint);
        } catch (error) {
          // A refused access token is refreshed once, as a sync does, and the read asked again.
          if (!(error instanceof SourceTokenExpiredError) || !plan.oauth || refreshed || probe.spent()) throw error;
          refreshed = true;
          probe.countOne();
          await context.refreshToken();
          endpoints = await plan.endpoints(context.credentials, context.connection);
          await ask(endpoints[index] ?? endpoint);
        }
        steps.push(passed(endpoint.step, endpoint.title, `${plan.what} answered`));
      } catch (error) {
        if (signal?.aborted) return { status: 'failed', message: 'the sync-worker is shutting down; check again' };
        if (error instanceof SourceRateLimitedError) limited = error;
        if (!(error instanceof Error && error.name.startsWith('Source'))) log.warn({ err: error, step: endpoint.step }, 'check step failed inside the gateway');
        const message = probe.timedOut() ? `the check's 20 s ran out before ${plan.what} answered: check that it is reachable from the gateway` : describeReadFailure(error, plan);
        steps.push(failed(endpoint.step, endpoint.title, message));
      }
    }
    steps.push(clockStep(probe.skewMs(), plan.what));
    steps.push(rateLimitStep(probe.rateLimits(), limited, plan.what));
    return done();
  }

  /**
   * The credential step alone, for credentials about to be saved (issue 32 "Checked at connect"): one
   * request at most, within `budgetMs`. Never throws.
   */
  async function credentialStep(providerKind: string, credentials: unknown, budgetMs: number, signal?: AbortSignal, demoEndpoints?: DemoEndpoints | null): Promise<CredentialCheckResult> {
    const provider = findProvider(providerKind);
    const plan = planOf(providerKind, demoEndpoints);
    if (!provider || !plan) return { outcome: 'unchecked', message: 'this provider has no credential step' };
    let endpoint: CheckEndpoint | undefined;
    try {
      const connection = { id: '', provider: provider.kind, sector: provider.sectors[0] ?? '', displayName: provider.displayName, signInId: null };
      endpoint = (await plan.endpoints(credentials, connection)).find((candidate) => candidate.credential);
    } catch (error) {
      if (error instanceof CheckCredentialsError) return { outcome: 'refused', message: error.message };
      deps.log.warn({ err: error, provider: providerKind }, 'the credential step failed inside the gateway');
      return { outcome: 'unreachable', message: 'saved, but not checked: the check failed inside the gateway; see the sync-worker log' };
    }
    if (!endpoint) return { outcome: 'unchecked', message: 'this provider has no credential step' };
    const probe = createCheckProbe({ maxRequests: 1, budgetMs, signal, transport: plan.givenAddress ? deps.givenAddressFetch : undefined });
    try {
      await clientFor(plan, probe, Date.now()).send(endpoint.url, { method: endpoint.method, body: endpoint.body, auth: endpoint.auth, headers: endpoint.headers });
      return { outcome: 'passed', message: `${plan.what} accepted the credential` };
    } catch (error) {
      if (error instanceof SourceAuthError || error instanceof SourceTokenExpiredError || (error instanceof SourceRejectedError && (error.status === 401 || error.status === 403))) {
        return { outcome: 'refused', message: `${plan.what} refused the credential: ${plan.credentialFix}` };
      }
      return { outcome: 'unreachable', message: `saved, but not checked: ${describeReadFailure(error, plan)}` };
    }
  }

  /** The `check_credentials` job: sealed credentials for the sign-in about to be made, opened here only. */
  async function runCredentialCheck(job: Job, data: CredentialCheckJob, _token?: string, signal?: AbortSignal): Promise<LiveJobResult> {
    const remaining = data.deadline - Date.now();
    if (remaining <= 0) return { status: 'failed', message: 'the check expired before a worker took it' };
    let credentials: unknown;
    try {
      credentials = openCredentials(deps.credentialsKey, Buffer.from(data.sealedCredentials, 'base64'), data.signInId);
    } catch (error) {
      deps.log.warn({ err: error, jobId: job.id, provider: data.provider }, 'credentials to check could not be opened');
      return { status: 'failed', message: 'the credentials could not be opened in the sync-worker (is its CREDENTIALS_KEY the Console\'s?)' };
    }
    return { status: 'answered', value: await credentialStep(data.provider, credentials, remaining, signal, data.demoEndpoints) };
  }

  return { runConnectionCheck, runCredentialCheck, credentialStep };
}
