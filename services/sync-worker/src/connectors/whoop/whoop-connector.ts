import { z } from 'zod';
import { WHOOP, WHOOP_API_BASE } from '@pcg/shared/providers';
import { OAuthCredentialsSchema } from '../../sign-ins/oauth-client.ts';
import type { Connector, ConnectorContext, SyncOutcome } from '../connector-types.ts';
import { walkPages } from '../kit/paging.ts';
import { createSourceClient } from '../kit/source-client.ts';
import { SourceAuthError, SourceUnavailableError } from '../kit/source-errors.ts';
import { whoopClassifier } from './whoop-classifier.ts';
import {
  recoverySamples,
  sleepRecord,
  workoutRecord,
  WhoopRecoverySchema,
  WhoopSleepSchema,
  WhoopWorkoutSchema,
  type WhoopSleep,
} from './whoop-mapping.ts';

const DAY_MS = 86_400_000;
/** How far back the first sync (and a sync after a lost cursor) reads. */
export const WHOOP_HISTORY_MS = 90 * DAY_MS;
/**
 * How far before the last sync an incremental one starts again: scores arrive late (`PENDING_SCORE` →
 * `SCORED`) and WHOOP signals deletions only by webhook, so the overlap is re-read, updated, and rows
 * listed last time inside it but gone now are removed.
 */
export const WHOOP_OVERLAP_MS = 3 * DAY_MS;
/** WHOOP's largest page. */
const PAGE_LIMIT = 25;

const PageSchema = z.object({ records: z.array(z.unknown()), next_token: z.string().nullish() });
type Page = z.infer<typeof PageSchema>;

/** Source ids listed by the last sync with the start of what they describe (epoch ms), per object. */
const CursorSchema = z.object({
  since: z.iso.datetime({ offset: true }),
  recent: z.record(z.string(), z.array(z.tuple([z.string(), z.number()]))).default({}),
});
type Cursor = z.infer<typeof CursorSchema>;

type Listed = { object: string; records: Array<{ source_id: string; start_at: string }> };

function tokenOf(context: ConnectorContext) {
  const parsed = OAuthCredentialsSchema.safeParse(context.credentials);
  if (!parsed.success) throw new SourceAuthError('the stored WHOOP sign-in is incomplete; sign in again');
  return parsed.data;
}

function api(context: ConnectorContext, apiBase: string) {
  const client = createSourceClient({ what: 'WHOOP', classifier: whoopClassifier, timeoutMs: context.requestTimeoutMs, signal: context.signal, maxRedirects: 0 });
  return async function* collection(path: string, start: string): AsyncGenerator<unknown> {
    const fetchPage = async (next: string | undefined): Promise<Page> => {
      const query = new URLSearchParams({ limit: String(PAGE_LIMIT), start, ...(next ? { nextToken: next } : {}) });
      // The token is read per page: a refresh between two syncs' pages replaced it.
      const parsed = PageSchema.safeParse(await client.json(`${apiBase}${path}?${query.toString()}`, { auth: { authorization: `Bearer ${tokenOf(context).accessToken}` } }));
      if (!parsed.success) throw new SourceUnavailableError(`WHOOP answered ${path} in an unexpected shape`);
      return parsed.data;
    };
    for await (const page of walkPages(fetchPage, (page) => page.next_token ?? undefined, { what: `WHOOP ${path}` })) yield* page.records;
  };
}

function parseAll<T>(context: ConnectorContext, what: string, schema: z.ZodType<T>, raw: readonly unknown[]): T[] {
  const parsed = raw.map((item) => schema.safeParse(item));
  const dropped = parsed.filter((result) => !result.success).length;
  if (dropped > 0) context.log.warn({ dropped, what }, 'WHOOP records in an unexpected shape were skipped');
  return parsed.flatMap((result) => (result.success ? [result.data] : []));
}

async function drain(iterator: AsyncGenerator<unknown>): Promise<unknown[]> {
  const items: unknown[] = [];
  for await (const item of iterator) items.push(item);
  return items;
}

/**
 * A WHOOP-style wearable (reference §3): sleeps, workouts and recoveries since a time window's start,
 * paged with `nextToken`, into the health objects with units converted at this edge. Reads only the
 * collections the sign-in's granted scopes cover.
 */
export function createWhoopConnector(options: { apiBase?: string } = {}): Connector {
  const apiBase = options.apiBase ?? WHOOP_API_BASE;
  return {
    provider: WHOOP,
    actions: [],
    async sync(context): Promise<SyncOutcome> {
      const now = Date.now();
      const previous = CursorSchema.safeParse(context.cursor);
      const cursor: Cursor | undefined = previous.success ? previous.data : undefined;
      const windowStart = cursor ? Date.parse(cursor.since) - WHOOP_OVERLAP_MS : now - WHOOP_HISTORY_MS;
      const start = new Date(windowStart).toISOString();
      const granted = tokenOf(context).scopes ?? [...(WHOOP.oauth?.scopes ?? [])];
      const collection = api(context, apiBase);

      const listed: Listed[] = [];
      const sleeps = new Map<string, WhoopSleep>();
      if (granted.includes('read:sleep')) {
        for (const sleep of parseAll(context, 'sleep', WhoopSleepSchema, await drain(collection('/v2/activity/sleep', start)))) sleeps.set(sleep.id, sleep);
        listed.push({ object: 'health.sleep_session', records: [...sleeps.values()].map(sleepRecord) });
      }
      if (granted.includes('read:workout')) {
        const workouts = parseAll(context, 'workout', WhoopWorkoutSchema, await drain(collection('/v2/activity/workout', start)));
        listed.push({ object: 'health.workout', records: workouts.map(workoutRecord) });
      }
      if (granted.includes('read:recovery')) {
        const recoveries = parseAll(context, 'recovery', WhoopRecoverySchema, await drain(collection('/v2/recovery', start)));
        listed.push({ object: 'health.sample', records: recoveries.flatMap((recovery) => recoverySamples(recovery, sleeps)) });
      }

      const recent: Cursor['recent'] = {};
      for (const { object, records } of listed) {
        await context.cache.upsert(object, records);
        const present = new Set(records.map((record) => record.source_id));
        // Only what the last sync listed inside this window can have vanished; older rows were not re-read.
        const vanished = (cursor?.recent[object] ?? []).filter(([id, at]) => at >= windowStart && !present.has(id)).map(([id]) => id);
        if (vanished.length > 0) await context.cache.remove(object, vanished);
        recent[object] = records.map((record): [string, number] => [record.source_id, Date.parse(record.start_at)]).filter(([, at]) => at >= now - WHOOP_OVERLAP_MS);
      }
      return { mode: cursor ? 'incremental' : 'full', cursor: { since: new Date(now).toISOString(), recent } satisfies Cursor };
    },
  };
}
