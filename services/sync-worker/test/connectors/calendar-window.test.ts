import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOriginRebaser } from '@pcg/shared/providers';
import { startGraphDouble, type GraphDouble } from '@pcg/testkit/doubles';
import { createCapturingLogger } from '@pcg/testkit/testing';
import type { CacheWriter, ConnectorContext } from '../../src/connectors/connector-types.ts';
import { defaultConnectors } from '../../src/connectors/registry.ts';
import { ACCOUNT } from '../icloud/icloud-setup.ts';
import { startICloudDavFront, type ICloudDavFront } from './icloud-dav-front.ts';

// One calendar window for every calendar source: the sync-worker's CALENDAR_PAST_DAYS and CALENDAR_FUTURE_DAYS
// reach the Microsoft and iCloud connectors as they reach Google's (issue 32, noticed: Microsoft kept 90/365 and
// iCloud 365/730 whatever the settings). The connectors are the registry's, built as the sync-worker builds them.
const DAY = 86_400_000;
let graph: GraphDouble;
let front: ICloudDavFront;

function contextFor(provider: string, credentials: unknown, rows: Map<string, Record<string, unknown>>): ConnectorContext {
  const cache: CacheWriter = {
    async upsert(_object, records) {
      for (const record of records) rows.set(String((record as { source_id: string }).source_id), record as Record<string, unknown>);
      return records.length;
    },
    sourceIds: async () => [...rows.keys()],
    idsOf: async () => new Map(),
    async remove(_object, ids) {
      for (const id of ids) rows.delete(id);
      return ids.length;
    },
  };
  return {
    connection: { id: `${provider}-calendar`, provider, sector: 'calendar', displayName: provider, signInId: 's1' },
    credentials,
    refreshToken: async () => undefined,
    cursor: null,
    signal: new AbortController().signal,
    requestTimeoutMs: 5_000,
    cache,
    log: createCapturingLogger(provider).log,
  };
}

async function graphToken(): Promise<string> {
  const authorize = new URL(`${graph.url}/common/oauth2/v2.0/authorize`);
  authorize.search = new URLSearchParams({ client_id: graph.client.clientId, redirect_uri: 'http://127.0.0.1:1/cb', response_type: 'code', scope: 'offline_access Calendars.Read' }).toString();
  const code = new URL((await fetch(authorize, { redirect: 'manual' })).headers.get('location') ?? '').searchParams.get('code') ?? '';
  const form = { grant_type: 'authorization_code', code, redirect_uri: 'http://127.0.0.1:1/cb', client_id: graph.client.clientId, client_secret: graph.client.clientSecret };
  return ((await (await fetch(`${graph.url}/common/oauth2/v2.0/token`, { method: 'POST', body: new URLSearchParams(form) })).json()) as { access_token: string }).access_token;
}

const connectorsWith = (pastDays: number, futureDays: number) =>
  defaultConnectors(createOriginRebaser(graph.env), {
    calendarWindow: { pastDays, futureDays },
    icloud: {
      caldavUrl: front.entryUrl,
      transport: (input, init) => front.transport(new URL(input instanceof Request ? input.url : input), init),
    },
  });
const connectorOf = (connectors: ReturnType<typeof defaultConnectors>, kind: string) => {
  const found = connectors.find((connector) => connector.provider.kind === kind);
  if (!found?.sync) throw new Error(`no ${kind} connector`);
  return found as Required<Pick<typeof found, 'sync'>> & typeof found;
};

beforeAll(async () => {
  graph = await startGraphDouble();
  front = await startICloudDavFront();
});
afterAll(async () => {
  await graph?.close();
  await front?.close();
});

describe('the calendar window follows CALENDAR_PAST_DAYS and CALENDAR_FUTURE_DAYS for every calendar source', () => {
  it('Microsoft asks calendarView delta for the days the settings give (10 back, 20 ahead of today, UTC midnights)', async () => {
    const from = graph.requests.length;
    const before = Math.floor(Date.now() / DAY) * DAY;
    await connectorOf(connectorsWith(10, 20), 'microsoft').sync(contextFor('microsoft', { accessToken: await graphToken(), refreshToken: null, expiresAt: null }, new Map()));
    const [round] = graph.requests.slice(from).filter((request) => request.path === '/v1.0/me/calendarView/delta' && request.query.has('startDateTime'));
    const today = Math.floor((round?.at ?? 0) / DAY) * DAY;
    expect([before, before + DAY]).toContain(today);
    expect(round?.query.get('startDateTime')).toBe(new Date(today - 10 * DAY).toISOString());
    expect(round?.query.get('endDateTime')).toBe(new Date(today + 20 * DAY).toISOString());
  });

  it('iCloud keeps an occurrence only inside the days the settings give: tomorrow\'s event is out with 1 day ahead, in with 2', async () => {
    const rows = (futureDays: number) => async () => {
      const kept = new Map<string, Record<string, unknown>>();
      await connectorOf(connectorsWith(0, futureDays), 'icloud').sync(contextFor('icloud', { ...ACCOUNT }, kept));
      return [...kept.values()].map((row) => row.title);
    };
    // The front's one event starts tomorrow at 09:00 UTC; a window of one day ends at tomorrow's midnight.
    expect(await rows(1)()).toEqual([]);
    expect(await rows(2)()).toEqual(['Answered after the trouble']);
  });
});
