import { randomUUID } from 'node:crypto';
import { CONSOLE_ACTS, OPERATOR_AGENT_ID, type AuditRecorder, type ConsoleAct } from '@pcg/shared/audit';
import { generateIngestSecret, sealCredentials } from '@pcg/shared/crypto';
import { ConflictError, DomainError, NotFoundError, ValidationError } from '@pcg/shared/errors';
import type { DatabasePool } from '@pcg/shared/db';
import type { Logger } from '@pcg/shared/logger';
import { createSignInQueries } from '@pcg/shared/sign-ins';
import { createAddressPolicy, credentialsAddressRefusal, DEFAULT_GATEWAY_PORTS, gatewayOwnPorts, type AddressPolicy } from '@pcg/shared/outbound';
import { findProvider, PROVIDERS, type DemoEndpoints, type ProviderDescriptor } from '@pcg/shared/providers';
import type { CheckRequester, SignInRequester, SyncProducer } from '@pcg/shared/queues';
import { checkBeforeSaving } from './connect-check.ts';
import type { z } from 'zod';
import { connectionHealth, createConnectionQueries, type ConnectionQueries, type ConnectionRow, type RemovedSignIn } from '@pcg/shared/connections';
import type { ConnectionView, CreateConnectionBody, UpdateConnectionBody } from './connections-types.ts';

export class QueueUnavailableError extends DomainError {
  constructor() {
    super('unavailable', 'queue_unavailable', 'the job queue (Redis) is not reachable; try again');
  }
}

const UNQUEUED = 'saved, but the sync could not be queued (Redis is not reachable); the sync-worker schedules it when it next starts';

export type ConnectionsServiceDeps = {
  db: DatabasePool;
  queries: ConnectionQueries;
  sync: Pick<SyncProducer, 'schedule' | 'unschedule' | 'requestSync'>;
  credentialsKey: Buffer;
  audit: AuditRecorder;
  log: Logger;
  /** Hands the removal of a deleted `link` sign-in's item to the sync-worker; absent, nothing is sent. */
  itemRemoval?: Pick<SignInRequester, 'removeItem'>;
  /** The check's credential step before a token connection is saved (issue 32); absent, nothing is asked. */
  credentialCheck?: Pick<CheckRequester, 'checkCredentials'>;
  now?: () => number;
  /** The outbound policy for a source address the operator types (issue 32); default with the gateway's default ports. */
  addressPolicy?: Pick<AddressPolicy, 'urlRefusal'>;
};

function describeIssues(error: z.ZodError): string {
  // Names the field and the rule, never the value (it may be a token).
  return error.issues.map((issue) => `'credentials${issue.path.length ? `.${issue.path.join('.')}` : ''}' ${issue.message}`).join('; ');
}

/**
 * The Console's connection acts (design 4.4). The Console never talks to a source: it seals what the
 * operator typed, writes the row, and asks the queue for syncs. Nothing it returns carries credentials
 * or a secret hash; a push secret is returned once, at creation or rotation.
 */
export function createConnectionsService(deps: ConnectionsServiceDeps) {
  const now = deps.now ?? Date.now;
  const addressPolicy = deps.addressPolicy ?? createAddressPolicy({ ownPorts: gatewayOwnPorts(DEFAULT_GATEWAY_PORTS) });

  function view(row: ConnectionRow): ConnectionView {
    const provider = findProvider(row.provider);
    const push = provider?.signIn === 'push';
    return {
      id: row.id,
      provider: row.provider,
      providerName: provider?.displayName ?? row.provider,
      sector: row.sector,
      displayName: row.display_name,
      status: row.status,
      health: connectionHealth(row, now()),
      signIn: provider?.signIn ?? 'token',
      signInId: row.sign_in_id,
      syncIntervalMinutes: push ? null : (row.sync_interval_minutes ?? provider?.defaultSyncIntervalMinutes ?? null),
      lastSyncedAt: row.last_synced_at,
      lastError: row.last_error,
      actionCount: Array.isArray(row.actions) ? row.actions.length : 0,
      ...(push ? { ingestPath: `/api/ingest/${row.id}` } : {}),
      hasIngestSecret: row.has_ingest_secret,
      ...(row.consent_expires_at ? { consentExpiresAt: row.consent_expires_at } : {}),
      createdAt: row.created_at,
      updatedAt: row.updated_at,
    };
  }

  async function existing(id: string): Promise<{ row: ConnectionRow; provider: ProviderDescriptor | undefined }> {
    const row = await deps.queries.get(id);
    if (!row) throw new NotFoundError('no such connection');
    return { row, provider: findProvider(row.provider) };
  }

  const pulls = (provider: ProviderDescriptor | undefined) => provider !== undefined && provider.signIn !== 'push';
  const intervalOf = (row: ConnectionRow, provider: ProviderDescriptor) => row.sync_interval_minutes ?? provider.defaultSyncIntervalMinutes ?? 60;

  /** Queue work after the database change; a queue failure leaves the change and says so. */
  async function queued(work: () => Promise<unknown>, connectionId: string): Promise<string | undefined> {
    try {
      await work();
      return undefined;
    } catch (error) {
      deps.log.warn({ err: error, connectionId }, 'could not reach the sync queue');
      return UNQUEUED;
    }
  }

  function sealed(provider: ProviderDescriptor, credentials: unknown, id: string): Buffer {
    const schema = provider.credentialsSchema;
    if (!schema) throw new ValidationError(`${provider.displayName} takes no credentials`);
    const parsed = schema.safeParse(credentials);
    if (!parsed.success) throw new ValidationError(`${provider.displayName} needs valid credentials: ${describeIssues(parsed.error)}`);
    const refusedAddress = credentialsAddressRefusal(addressPolicy, provider, parsed.data);
    if (refusedAddress) throw new ValidationError(`${provider.displayName}: ${refusedAddress}`);
    return sealCredentials(deps.credentialsKey, parsed.data, id);
  }

  /** A demo's local servers (issue 42): loopback only (the schema), and none at one of the gateway's own ports. */
  function refuseDemoServers(demo: DemoEndpoints): void {
    const targets = (demo.ICLOUD_RESOLVE ?? '').split(',').filter((entry) => entry.trim() !== '').map((entry) => entry.split('=')[1] ?? '');
    for (const target of targets) {
      const refusal = addressPolicy.urlRefusal(new URL(`https://${target}`));
      if (refusal) throw new ValidationError(`demo: ${target} was refused: ${refusal}`);
    }
  }

  /** A pasted credential replaces its sign-in's in place; every connection of the sign-in is active again. */
  async function replaceCredentials(row: ConnectionRow, provider: ProviderDescriptor, credentials: unknown): Promise<{ row: ConnectionRow; unchecked?: string }> {
    const signInId = row.sign_in_id;
    if (signInId === null) throw new ConflictError(`${provider.displayName} holds no credentials`);
    if (provider.signIn === 'oauth' || provider.signIn === 'link') throw new ConflictError(`${provider.displayName} signs in at the provider: open GET /api/connect/${provider.kind}/start?signInId=${signInId}`);
    if (provider.claim) throw new ConflictError(`${provider.displayName} is connected with a new setup token: POST /api/connect/${provider.kind}/claim`);
    const sealedCredentials = sealed(provider, credentials, signInId);
    // The check's credential step, as at connect (issue 32): a refused credential replaces nothing.
    const demoEndpoints = (await createSignInQueries(deps.db).get(signInId))?.demo_endpoints;
    const unchecked = await checkBeforeSaving(deps.credentialCheck, provider, sealedCredentials, signInId, demoEndpoints);
    await deps.db.transaction(async (tx) => {
      await createSignInQueries(tx).replaceCredentials(signInId, sealedCredentials);
      await createConnectionQueries(tx).credentialsReplaced(signInId);
    });
    return { row: (await deps.queries.get(row.id)) ?? row, ...(unchecked ? { unchecked } : {}) };
  }

  /**
   * A `link` sign-in (the bank aggregator) holds an item that stays active, and billed, at the
   * aggregator until it is removed there: the removal goes to the sync-worker as a job that nobody
   * awaits. The deletion is done already; a queue that cannot be reached is logged, never refused.
   */
  async function removeAtSource(signIn: RemovedSignIn): Promise<void> {
    if (findProvider(signIn.provider)?.signIn !== 'link' || !deps.itemRemoval) return;
    const removal = deps.itemRemoval;
    try {
      const jobId = await removal.removeItem({
        provider: signIn.provider,
        signInId: signIn.id,
        sealedCredentials: signIn.sealedCredentials.toString('base64'),
        ...(signIn.demoEndpoints ? { demoEndpoints: signIn.demoEndpoints } : {}),
      });
      deps.log.info({ signInId: signIn.id, provider: signIn.provider, jobId }, 'item removal handed to the sync-worker');
    } catch (error) {
      deps.log.warn({ err: error, signInId: signIn.id, provider: signIn.provider }, 'could not queue the removal of the item at the provider; remove it from the provider\'s dashboard');
    }
  }

  const acts = {
    async list(): Promise<ConnectionView[]> {
      return (await deps.queries.list()).map(view);
    },

    /** The views of some connections, in the order given; unknown ids are left out. */
    async views(ids: readonly string[]): Promise<ConnectionView[]> {
      const rows = await Promise.all(ids.map((id) => deps.queries.get(id)));
      return rows.flatMap((row) => (row ? [view(row)] : []));
    },

    async create(body: CreateConnectionBody): Promise<{ connection: ConnectionView; connections: ConnectionView[]; ingestSecret?: string; warning?: string }> {
      const provider = findProvider(body.provider);
      if (!provider) throw new ValidationError(`unknown provider '${body.provider}'; providers: ${PROVIDERS.map((p) => p.kind).join(', ')}`);
      if (provider.signIn === 'oauth' || provider.signIn === 'link') throw new ValidationError(`${provider.displayName} signs in at the provider: open GET /api/connect/${provider.kind}/start`);
      if (provider.claim) throw new ValidationError(`${provider.displayName} is connected with a setup token: POST /api/connect/${provider.kind}/claim`);
      const push = provider.signIn === 'push';
      if (push && provider.sectors.length !== 1) throw new ValidationError(`${provider.displayName} cannot be connected here`);
      if (push && body.credentials !== undefined) throw new ValidationError(`${provider.displayName} pushes its data and takes no credentials`);
      if (push && body.syncIntervalMinutes !== undefined) throw new ValidationError(`${provider.displayName} pushes its data and has no sync interval`);
      if (body.demo && (push || provider.kind !== 'icloud')) throw new ValidationError(`demo: only a demo iCloud account is connected here with local servers; ${provider.displayName} is not`);
      if (body.demo) refuseDemoServers(body.demo);
      const secret = push ? generateIngestSecret() : undefined;
      const signInId = push ? null : randomUUID();
      const sealedCredentials = signInId === null ? null : sealed(provider, body.credentials, signInId);
      const unchecked = signInId !== null && sealedCredentials !== null ? await checkBeforeSaving(deps.credentialCheck, provider, sealedCredentials, signInId, body.demo) : undefined;
      // A pasted credential is one sign-in; it covers every sector of its provider, one connection each (spec 2.5).
      const rows = await deps.db.transaction(async (tx) => {
        if (signInId !== null && sealedCredentials !== null) {
          await createSignInQueries(tx).insert({ id: signInId, provider: provider.kind, sealed: sealedCredentials, grantedScopes: [], accountId: null, demoEndpoints: body.demo ?? null });
        }
        const connections = createConnectionQueries(tx);
        const made: ConnectionRow[] = [];
        for (const sector of provider.sectors) {
          made.push(
            await connections.insert({
              id: randomUUID(),
              provider: provider.kind,
              sector,
              displayName: body.displayName ?? provider.displayName,
              signInId,
              ingestSecretHash: secret?.hash ?? null,
              syncIntervalMinutes: push ? null : (body.syncIntervalMinutes ?? provider.defaultSyncIntervalMinutes),
            }),
          );
        }
        return made;
      });
      const [row] = rows;
      if (!row) throw new Error('the provider covers no sector');
      deps.log.info({ connectionIds: rows.map((made) => made.id), provider: provider.kind, signInId }, 'connection created');
      let warning: string | undefined = unchecked;
      // The scheduler's first run starts at once: that is the first sync.
      for (const made of push ? [] : rows) warning = (await queued(() => deps.sync.schedule(made.id, intervalOf(made, provider)), made.id)) ?? warning;
      return { connection: view(row), connections: rows.map(view), ...(secret ? { ingestSecret: secret.secret } : {}), ...(warning ? { warning } : {}) };
    },

    /** Changes the interval, the name, or a token provider's credentials (replaced on its sign-in). */
    async update(id: string, body: UpdateConnectionBody): Promise<{ connection: ConnectionView; warning?: string }> {
      const found = await existing(id);
      const { provider } = found;
      let row = found.row;
      if (body.syncIntervalMinutes !== undefined && !pulls(provider)) throw new ConflictError('a push connection is not synced on a schedule; it has no interval');
      if (body.credentials !== undefined && !provider?.credentialsSchema) throw new ConflictError(`${provider?.displayName ?? row.provider} takes no credentials`);
      // Credentials first: a credential the source refuses changes nothing else either.
      const replaced = body.credentials !== undefined && provider ? await replaceCredentials(row, provider, body.credentials) : undefined;
      if (replaced) row = replaced.row;
      if (body.displayName !== undefined) row = (await deps.queries.rename(id, body.displayName)) ?? row;
      if (body.syncIntervalMinutes !== undefined) row = (await deps.queries.setInterval(id, body.syncIntervalMinutes)) ?? row;
      let warning: string | undefined = replaced?.unchecked;
      const reschedule = body.syncIntervalMinutes !== undefined || body.credentials !== undefined;
      if (reschedule && provider && pulls(provider) && (row.status === 'active' || row.status === 'error')) {
        warning = (await queued(() => deps.sync.schedule(id, intervalOf(row, provider)), id)) ?? warning;
      }
      return { connection: view(row), ...(warning ? { warning } : {}) };
    },

    async requestSync(id: string): Promise<{ connection: ConnectionView; jobId: string }> {
      const { row, provider } = await existing(id);
      // A connection of no known provider (the demo seed's) has no source at all: it is not a push connection.
      if (!provider) throw new ConflictError(`${row.display_name} holds data seeded by the demo (provider '${row.provider}'): it has no source to sync from`);
      if (!pulls(provider)) throw new ConflictError('a push connection receives its data from the device; there is nothing to sync');
      if (row.status === 'paused' || row.status === 'needs_sign_in') throw new ConflictError(`the connection is ${row.status.replace('_', ' ')}; resume it first`);
      try {
        return { connection: view(row), jobId: await deps.sync.requestSync(id, 'manual') };
      } catch (error) {
        deps.log.warn({ err: error, connectionId: id }, 'could not reach the sync queue');
        throw new QueueUnavailableError();
      }
    },

    async pause(id: string): Promise<{ connection: ConnectionView; warning?: string }> {
      const { provider } = await existing(id);
      const row = await deps.queries.pause(id);
      if (!row) throw new NotFoundError('no such connection');
      const warning = pulls(provider) ? await queued(() => deps.sync.unschedule(id), id) : undefined;
      return { connection: view(row), ...(warning ? { warning } : {}) };
    },

    async resume(id: string): Promise<{ connection: ConnectionView; warning?: string }> {
      const { provider } = await existing(id);
      const row = await deps.queries.resume(id);
      if (!row) throw new NotFoundError('no such connection');
      const warning = provider && pulls(provider) ? await queued(() => deps.sync.schedule(id, intervalOf(row, provider)), id) : undefined;
      return { connection: view(row), ...(warning ? { warning } : {}) };
    },

    /** A new push secret, shown once; the old one stops working with this UPDATE. */
    async rotateSecret(id: string): Promise<{ connection: ConnectionView; ingestSecret: string }> {
      const { provider } = await existing(id);
      if (provider?.signIn !== 'push') throw new ConflictError('only push connections have an ingest secret');
      const secret = generateIngestSecret();
      const row = await deps.queries.replaceSecretHash(id, secret.hash);
      if (!row) throw new NotFoundError('no such connection');
      deps.log.info({ connectionId: id }, 'ingest secret rotated');
      return { connection: view(row), ingestSecret: secret.secret };
    },

    /** Removes the connection and, with it, everything it cached (ON DELETE CASCADE). */
    async remove(id: string): Promise<void> {
      const { provider } = await existing(id);
      const removed = await deps.queries.remove(id);
      if (!removed) throw new NotFoundError('no such connection');
      if (pulls(provider)) await queued(() => deps.sync.unschedule(id), id);
      if (removed.signInGone) await removeAtSource(removed.signInGone);
      deps.log.info({ connectionId: id, signInDeleted: removed.signInGone?.id ?? null }, 'connection deleted');
    },
  };

  /**
   * Runs one Console act and leaves its audit row (spec 2.3, 6): operator, allow, ok or error. `args`
   * name the connection and what changed, never a credential or a secret.
   */
  async function recorded<T>(tools: readonly ConsoleAct[], id: string | null, args: Record<string, unknown>, requestId: string | undefined, work: () => Promise<T>, sectorOf?: (result: T) => string | null): Promise<T> {
    const before = id === null ? null : ((await deps.queries.get(id).catch(() => null))?.sector ?? null);
    const record = (outcome: 'ok' | 'error', sector: string | null) => {
      for (const tool of tools) deps.audit.record({ agentId: OPERATOR_AGENT_ID, tool, sector, decision: 'allow', args, outcome, requestId });
    };
    try {
      const result = await work();
      record('ok', sectorOf ? sectorOf(result) : before);
      return result;
    } catch (error) {
      record('error', before);
      throw error;
    }
  }

  return {
    list: acts.list,
    views: acts.views,
    create: (body: CreateConnectionBody, requestId?: string) =>
      recorded([CONSOLE_ACTS.createConnection], null, { provider: body.provider, ...(body.displayName ? { displayName: body.displayName } : {}) }, requestId, () => acts.create(body), (result) =>
        result.connections.length === 1 ? result.connection.sector : null,
      ),
    update: (id: string, body: UpdateConnectionBody, requestId?: string) => {
      const tools: ConsoleAct[] = [];
      if (body.displayName !== undefined) tools.push(CONSOLE_ACTS.renameConnection);
      if (body.credentials !== undefined) tools.push(CONSOLE_ACTS.replaceCredentials);
      if (body.syncIntervalMinutes !== undefined) tools.push(CONSOLE_ACTS.setSyncInterval);
      const args = {
        connectionId: id,
        ...(body.displayName !== undefined ? { displayName: body.displayName } : {}),
        ...(body.syncIntervalMinutes !== undefined ? { syncIntervalMinutes: body.syncIntervalMinutes } : {}),
      };
      return recorded(tools, id, args, requestId, () => acts.update(id, body));
    },
    requestSync: (id: string, requestId?: string) => recorded([CONSOLE_ACTS.syncConnection], id, { connectionId: id }, requestId, () => acts.requestSync(id)),
    pause: (id: string, requestId?: string) => recorded([CONSOLE_ACTS.pauseConnection], id, { connectionId: id }, requestId, () => acts.pause(id)),
    resume: (id: string, requestId?: string) => recorded([CONSOLE_ACTS.resumeConnection], id, { connectionId: id }, requestId, () => acts.resume(id)),
    rotateSecret: (id: string, requestId?: string) => recorded([CONSOLE_ACTS.rotateIngestSecret], id, { connectionId: id }, requestId, () => acts.rotateSecret(id)),
    remove: (id: string, requestId?: string) => recorded([CONSOLE_ACTS.removeConnection], id, { connectionId: id }, requestId, () => acts.remove(id)),
  };
}

export type ConnectionsService = ReturnType<typeof createConnectionsService>;
