import { z } from 'zod';
import { canonicalTimeZone } from '@pcg/shared/settings';
import { HOME_ASSISTANT, HomeAssistantCredentialsSchema, type HomeAssistantCredentials } from '@pcg/shared/providers';
import type { Connector, ConnectorContext, SyncOutcome } from '../connector-types.ts';
import type { Outbound } from '@pcg/shared/outbound';
import { createSourceClient } from '../kit/source-client.ts';
import { createSourceOutbound } from '../kit/source-outbound.ts';
import { LiveRequestError, SourceAuthError, SourceRejectedError, SourceUnavailableError } from '../kit/source-errors.ts';
import { homeAssistantClassifier } from './home-assistant-classifier.ts';
import { actionsFromServices, entityRecord, filterLiveRows, parseActionName, parseStates, type HaStateRow } from './home-assistant-mapping.ts';

const OBJECT = 'home.entity';
/** A full sync (all states, the service catalogue, vanished entities removed) at least this often. */
export const FULL_SYNC_EVERY_MS = 60 * 60_000;
/** Keeps `filter_entity_id` well under the hub's request-line limit. */
const FILTER_CHARS = 3_000;
/** The hub answers a service call after it finished, or after 10 s; allow a little more. */
const ACTION_TIMEOUT_MS = 15_000;
const LIVE_ROW_CAP = 1_000;

/**
 * The connector's state on the connection: where history reading resumes, when the last full sync
 * ran, and which services answer with data (called with `?return_response`).
 */
const CursorSchema = z.object({
  since: z.iso.datetime({ offset: true }),
  fullAt: z.iso.datetime({ offset: true }),
  responding: z.array(z.string()).default([]),
});
type Cursor = z.infer<typeof CursorSchema>;

function credentialsOf(context: ConnectorContext): HomeAssistantCredentials {
  const parsed = HomeAssistantCredentialsSchema.safeParse(context.credentials);
  // Stored credentials that no longer parse cannot be repaired by retrying.
  if (!parsed.success) throw new SourceAuthError('the stored hub credentials are incomplete; enter them again');
  return parsed.data;
}

/** What the operator does when the outbound policy refuses the hub's address (issue 32). */
export const HUB_ADDRESS_FIX = "enter the hub's own address in the connection (its name or LAN address, as in http://homeassistant.local:8123)";

/** Every request to the hub goes through the outbound policy: the address is the operator's to give. */
function hub(context: ConnectorContext, outbound: Outbound) {
  const { baseUrl, token } = credentialsOf(context);
  const client = createSourceClient({
    what: 'the hub',
    classifier: homeAssistantClassifier,
    timeoutMs: context.requestTimeoutMs,
    signal: context.signal,
    fetch: outbound.fetch,
    refusedAddressFix: HUB_ADDRESS_FIX,
  });
  const auth = { authorization: `Bearer ${token}` };
  return (path: string, options: { method?: 'GET' | 'POST'; body?: unknown; timeoutMs?: number } = {}) =>
    client.json(`${baseUrl}${path}`, {
      method: options.method,
      body: options.body === undefined ? undefined : { json: options.body },
      auth,
      timeoutMs: options.timeoutMs,
    });
}

/**
 * The newest `last_updated` seen, kept as the hub wrote it (microseconds): history returns changes strictly
 * after it, so rounding it down to milliseconds would fetch the newest entity again every time.
 */
function newest(states: readonly HaStateRow[], floor: string | undefined): string | undefined {
  let best = floor;
  for (const state of states) {
    const at = state.last_updated;
    if (at && !Number.isNaN(Date.parse(at)) && (best === undefined || Date.parse(at) > Date.parse(best) || (Date.parse(at) === Date.parse(best) && at > best))) best = at;
  }
  return best;
}

function unreadable(what: string): never {
  throw new SourceUnavailableError(`the hub answered ${what} in an unexpected shape`);
}

/** Every state, the service catalogue, and the removal of entities the hub no longer has. */
async function fullSync(context: ConnectorContext, outbound: Outbound): Promise<SyncOutcome> {
  const get = hub(context, outbound);
  let states: HaStateRow[];
  try {
    states = parseStates(await get('/api/states')).states;
  } catch (error) {
    if (error instanceof TypeError) unreadable('/api/states');
    throw error;
  }
  await context.cache.upsert(OBJECT, states.map(entityRecord));
  // A hub always has some entities; an empty answer is a glitch, and must not empty the cache.
  if (states.length > 0) {
    const present = new Set(states.map((state) => state.entity_id));
    const vanished = (await context.cache.sourceIds(OBJECT)).filter((id) => !present.has(id));
    await context.cache.remove(OBJECT, vanished);
  } else context.log.warn('the hub listed no entities; keeping the cached ones');

  let catalogue: ReturnType<typeof actionsFromServices>;
  try {
    catalogue = actionsFromServices(await get('/api/services'));
  } catch (error) {
    if (error instanceof z.ZodError) unreadable('/api/services');
    throw error;
  }
  const now = new Date().toISOString();
  const cursor: Cursor = { since: newest(states, undefined) ?? now, fullAt: now, responding: catalogue.responding };
  const timeZone = await hubTimeZone(get, context);
  return { mode: 'full', cursor, actions: catalogue.actions, ...(timeZone ? { timeZone } : {}) };
}

const HubConfigSchema = z.object({ time_zone: z.string() });

/**
 * The zone the hub is set to (`/api/config`), the default of the person's time zone. A hub whose
 * answer names no zone Intl knows is not a failed sync: the person's zone then falls back to the machine's.
 */
async function hubTimeZone(get: ReturnType<typeof hub>, context: ConnectorContext): Promise<string | undefined> {
  const parsed = HubConfigSchema.safeParse(await get('/api/config'));
  const zone = parsed.success ? canonicalTimeZone(parsed.data.time_zone) : undefined;
  if (!zone) context.log.warn('the hub reported no time zone this gateway knows; the person\'s zone stays as it was');
  return zone;
}

/** Only the entities that changed since the cursor, read from the hub's history (one row per change). */
async function incrementalSync(context: ConnectorContext, outbound: Outbound, cursor: Cursor, known: readonly string[]): Promise<SyncOutcome> {
  const get = hub(context, outbound);
  const start = cursor.since;
  const end = new Date(Date.now() + 86_400_000).toISOString();
  const latest = new Map<string, HaStateRow>();
  for (const chunk of chunkIds(known)) {
    const query = new URLSearchParams({ filter_entity_id: chunk.join(','), end_time: end, significant_changes_only: '0' });
    const raw = await get(`/api/history/period/${encodeURIComponent(start)}?${query.toString()}&skip_initial_state`);
    if (!Array.isArray(raw)) unreadable('history');
    for (const series of raw) {
      if (!Array.isArray(series)) unreadable('history');
      const { states } = parseStates(series);
      const last = states.at(-1);
      if (last) latest.set(last.entity_id, last);
    }
  }
  const changed = [...latest.values()];
  await context.cache.upsert(OBJECT, changed.map(entityRecord));
  return { mode: 'incremental', cursor: { ...cursor, since: newest(changed, cursor.since) ?? cursor.since } };
}

function chunkIds(ids: readonly string[]): string[][] {
  const chunks: string[][] = [];
  let current: string[] = [];
  let length = 0;
  for (const id of ids) {
    if (current.length > 0 && length + id.length + 1 > FILTER_CHARS) {
      chunks.push(current);
      current = [];
      length = 0;
    }
    current.push(id);
    length += id.length + 1;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/**
 * Home Assistant over its REST API with a long-lived token (reference §9). The REST API has no change
 * feed, so a sync is incremental through `/api/history/period` for the entities already known, and full
 * (all states, the service catalogue, removals, new entities) on the first sync and at least hourly.
 */
export function createHomeAssistantConnector(options: { outbound: Outbound }): Connector {
  const { outbound } = options;
  return {
    provider: HOME_ASSISTANT,
    actions: 'discovered',

    async sync(context) {
      const cursor = CursorSchema.safeParse(context.cursor);
      if (!cursor.success || Date.now() - Date.parse(cursor.data.fullAt) >= FULL_SYNC_EVERY_MS) return fullSync(context, outbound);
      const known = await context.cache.sourceIds(OBJECT);
      if (known.length === 0) return fullSync(context, outbound);
      try {
        return await incrementalSync(context, outbound, cursor.data, known);
      } catch (error) {
        // The hub refusing the history query (say, for an entity id it no longer accepts) is not a reason
        // to stop syncing: a full sync needs no history and refreshes the entity list.
        if (!(error instanceof SourceRejectedError)) throw error;
        context.log.warn({ reason: error.message }, 'history query refused; syncing in full');
        return fullSync(context, outbound);
      }
    },

    async fetchLive(context, input) {
      if (input.object !== OBJECT) throw new LiveRequestError(`the hub serves home.entity only, not '${input.object}'`);
      const get = hub(context, outbound);
      const where = input.where ?? [];
      const single = input.id ?? (where.length === 1 && where[0]?.field === 'entity_id' && where[0].op === 'eq' ? String(where[0].value) : undefined);
      if (single !== undefined) {
        if (!/^[a-z0-9_]+\.[a-z0-9_]+$/.test(single)) return { rows: [] };
        try {
          const { states } = parseStates([await get(`/api/states/${encodeURIComponent(single)}`)]);
          return { rows: filterLiveRows(states.map(entityRecord), where) };
        } catch (error) {
          if (error instanceof SourceRejectedError && error.status === 404) return { rows: [] };
          throw error;
        }
      }
      const raw = await get('/api/states');
      let states: HaStateRow[];
      try {
        states = parseStates(raw).states;
      } catch {
        unreadable('/api/states');
      }
      return { rows: filterLiveRows(states.map(entityRecord), where).slice(0, LIVE_ROW_CAP) };
    },

    async invokeAction(context, input) {
      const parts = parseActionName(input.name);
      if (!parts) return { ok: false, error: `unknown action '${input.name}': hub actions are named home.<domain>.<service>` };
      const responding = CursorSchema.safeParse(context.cursor).data?.responding ?? [];
      const wantsResponse = responding.includes(`${parts.domain}.${parts.service}`);
      const path = `/api/services/${parts.domain}/${parts.service}${wantsResponse ? '?return_response' : ''}`;
      let answer: unknown;
      try {
        answer = await hub(context, outbound)(path, { method: 'POST', body: input.arguments, timeoutMs: ACTION_TIMEOUT_MS });
      } catch (error) {
        if (error instanceof SourceRejectedError) return { ok: false, error: `the hub rejected ${input.name}: ${error.detail}` };
        throw error;
      }
      const changedRaw = wantsResponse ? (answer as { changed_states?: unknown }).changed_states : answer;
      const { states } = Array.isArray(changedRaw) ? parseStates(changedRaw) : { states: [] };
      const changed = states.map(entityRecord);
      // The cache follows what the action changed at once, rather than at the next sync.
      await context.cache.upsert(OBJECT, changed).catch((error: unknown) => context.log.warn({ err: error }, 'could not cache the states an action changed'));
      return {
        ok: true,
        result: { changed, ...(wantsResponse ? { response: (answer as { service_response?: unknown }).service_response ?? null } : {}) },
      };
    },
  };
}

/** The connector with the gateway's default ports; the sync-worker makes its own with the configured ones. */
export const homeAssistantConnector: Connector = createHomeAssistantConnector({ outbound: createSourceOutbound() });
