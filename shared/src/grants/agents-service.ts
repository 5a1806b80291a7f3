import type { CommonQueryMethods } from 'slonik';
import { LATE, within } from '../lifecycle/within.ts';
import type { Logger } from '../logger/index.ts';
import type { AgentEventPublisher } from './agent-events.ts';
import { generateAgentKey, hashAgentKey } from './agent-key-fns.ts';
import { AgentNotFoundError, AgentRevokedError } from './agents-errors.ts';
import { createAgentQueries, type AgentChanges } from './agents-queries.ts';
import type { AgentRecord, AgentView, CreateAgentInput, IssuedKey } from './agents-types.ts';
import { agentStatus, deadlineFromDays } from './grants-fns.ts';
import type { AgentEvent } from './grants-types.ts';

export type AgentServiceDeps = {
  db: CommonQueryMethods;
  events: AgentEventPublisher;
  log: Logger;
  /** The clock deadlines and statuses are computed from; default the system clock. */
  now?: () => Date;
  /** How long a change waits for its events to reach Redis before it answers anyway; default 500 ms. */
  publishWaitMs?: number;
};

const PUBLISH_WAIT_MS = 500;

export type AgentUpdate = {
  sectors?: string[];
  /** Days from now; null removes the deadline; undefined leaves it. */
  expiresInDays?: number | null;
};

/**
 * The grant lifecycle of spec 3.1 for the Console's admin routes. Every change bumps the agent's
 * generation in the statement that makes it and publishes the agent event after that statement has
 * committed. None of these acts leaves an audit row (spec 6), and no key reaches a log line.
 */
export function createAgentService({ db, events, log, now = () => new Date(), publishWaitMs = PUBLISH_WAIT_MS }: AgentServiceDeps) {
  const queries = createAgentQueries(db);

  const view = (record: AgentRecord): AgentView => ({
    name: record.name,
    sectors: record.sectors,
    createdAt: record.createdAt,
    expiresAt: record.expiresAt,
    revokedAt: record.revokedAt,
    updatedAt: record.updatedAt,
    status: agentStatus(record, now()),
  });

  const issued = (record: AgentRecord, key: string): IssuedKey => ({
    name: record.name,
    key,
    sectors: record.sectors,
    createdAt: record.createdAt,
    expiresAt: record.expiresAt,
  });

  /**
   * The change is already committed: a Redis that is away must neither turn it into an error nor hold
   * the answer (a command waits for ioredis's reconnect attempts, seconds into an outage). The events go
   * out in order; after `publishWaitMs` the answer goes anyway and a late publish only logs. Gateways
   * check live sessions against Postgres while their event channel is down, and again once it is back.
   */
  async function announce(changes: AgentEvent[]): Promise<void> {
    const publishing = (async () => {
      for (const event of changes) {
        log.info({ agent: event.agent, kind: event.kind }, 'agent grant changed');
        try {
          await events.publish(event);
        } catch (error) {
          log.warn({ agent: event.agent, kind: event.kind, err: error }, 'agent event not published');
        }
      }
    })();
    if ((await within(publishing, publishWaitMs)) === LATE) log.warn({ agents: [...new Set(changes.map((event) => event.agent))] }, 'agent event publish still pending; answering without it');
  }

  async function requireRecord(name: string): Promise<AgentRecord> {
    const record = await queries.findByName(name);
    if (!record) throw new AgentNotFoundError(name);
    return record;
  }

  return {
    /** Creates the grant, or rotates it when the name exists (spec 5 rule 7). */
    async createOrRotate(input: CreateAgentInput): Promise<{ created: boolean; issued: IssuedKey }> {
      const key = generateAgentKey();
      const { record, inserted } = await queries.upsert({
        name: input.name,
        keyHash: hashAgentKey(key),
        sectors: input.sectors,
        expiresAt: deadlineFromDays(input.expiresInDays, now()),
      });
      await announce([{ agent: record.name, kind: inserted ? 'created' : 'rotated' }]);
      return { created: inserted, issued: issued(record, key) };
    },

    async list(): Promise<AgentView[]> {
      return (await queries.list()).map(view);
    },

    async update(name: string, update: AgentUpdate): Promise<AgentView> {
      const changes: AgentChanges = {};
      const kinds: AgentEvent['kind'][] = [];
      if (update.sectors !== undefined) {
        changes.sectors = update.sectors;
        kinds.push('sectors_changed');
      }
      if (update.expiresInDays !== undefined) {
        changes.expiresAt = deadlineFromDays(update.expiresInDays, now());
        kinds.push('deadline_changed');
      }
      if (kinds.length === 0) return view(await requireRecord(name));
      const record = await queries.update(name, changes);
      if (!record) throw new AgentNotFoundError(name);
      await announce(kinds.map((kind) => ({ agent: name, kind })));
      return view(record);
    },

    /** A new key for the grant; the old one is refused from now on. A revoked grant is not revived. */
    async rotate(name: string): Promise<IssuedKey> {
      const key = generateAgentKey();
      const record = await queries.replaceKey(name, hashAgentKey(key));
      if (!record) {
        await requireRecord(name);
        throw new AgentRevokedError(name);
      }
      await announce([{ agent: name, kind: 'rotated' }]);
      return issued(record, key);
    },

    /** Revoking a revoked grant changes nothing and announces nothing. */
    async revoke(name: string): Promise<AgentView> {
      const record = await queries.revoke(name);
      if (!record) return view(await requireRecord(name));
      await announce([{ agent: name, kind: 'revoked' }]);
      return view(record);
    },

    async remove(name: string): Promise<void> {
      if (!(await queries.remove(name))) throw new AgentNotFoundError(name);
      await announce([{ agent: name, kind: 'deleted' }]);
    },
  };
}

export type AgentService = ReturnType<typeof createAgentService>;
