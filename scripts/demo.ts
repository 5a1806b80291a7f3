import { existsSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_REDIS_URL } from '@pcg/shared/config';
import { dayStart, haePayloadV1, haePayloadV2, sendHealthPush, startHomeAssistantDouble, startSimplefinDouble } from '@pcg/testkit/doubles';
import { createLogger } from '@pcg/shared/logger';
import { createLiveRequester } from '@pcg/shared/queues';
import { consoleClient, type DemoConnection } from './demo/demo-console.ts';
import { connectDemoGoogleAndWearable } from './demo/google-and-wearable.ts';
import { connectDemoICloud, ICLOUD_DEMO_NAME } from './demo/icloud.ts';
import { connectDemoMicrosoft } from './demo/microsoft.ts';
import { demoApps } from './demo/demo-apps.ts';
import { demoLedger } from './demo/demo-ledger.ts';
import { connectDemoAggregator } from './demo/plaid.ts';
import { probeRedis, readKeeperState, storeFiles } from './local-services/index.ts';

/**
 * `npm run demo`: with the gateway running (`npm start` in another terminal), starts a demo hub (the
 * Home Assistant double) and a demo phone (the health push sender), connects both through the Console,
 * and shows a sync, a live read, an action, a rejected action and a push, with no accounts; then the bank
 * sources, Microsoft, Google, the wearable and (with Radicale and Dovecot installed) iCloud, each a demo
 * sign-in marked with its local stand-in, so the gateway needs no setting (issue 42). The sources
 * keep running (the hub changes, the phone pushes) until Ctrl-C, which pauses every connection the demo made.
 * `npm run demo -- --remove` deletes those and what they cached, and nothing else (`DATA_DIR/demo-made.json`).
 */
const root = path.resolve(import.meta.dirname, '..');
if (existsSync(path.join(root, '.env'))) process.loadEnvFile(path.join(root, '.env'));
const say = (line: string) => console.log(`[demo] ${line}`);
const HUB_NAME = 'Demo hub';
const PHONE_NAME = 'Demo phone';
const HUB_TOKEN = 'demo-hub-long-lived-token';
const hubPort = Number(process.env.DEMO_HUB_PORT ?? 18123);
const graphPort = Number(process.env.DEMO_GRAPH_PORT ?? 18124);
const googlePort = Number(process.env.DEMO_GOOGLE_PORT ?? 18125);
const wearablePort = Number(process.env.DEMO_WEARABLE_PORT ?? 18126);
const radicalePort = Number(process.env.DEMO_RADICALE_PORT ?? 18127);
const dovecotPort = Number(process.env.DEMO_DOVECOT_PORT ?? 18128);
const aggregatorPort = Number(process.env.DEMO_AGGREGATOR_PORT ?? 18129);
const consoleBase = `http://${process.env.BIND_HOST ?? '127.0.0.1'}:${process.env.REST_PORT ?? 8787}`;
const api = consoleClient(consoleBase);

async function waitFor<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** The Redis the running gateway uses, found the way the launcher finds it (never started here). */
async function findRedis(): Promise<string> {
  const candidates = process.env.REDIS_URL
    ? [process.env.REDIS_URL]
    : [readKeeperState(storeFiles(path.resolve(root, process.env.DATA_DIR || 'data'), 'redis').stateFile)?.url, process.env.LOCAL_REDIS_URL || DEFAULT_REDIS_URL];
  for (const url of candidates) if (url && (await probeRedis(url)).ok) return url;
  throw new Error('the gateway\'s Redis does not answer; is `npm start` running?');
}

const find = (connections: DemoConnection[], provider: string, name: string) =>
  connections.find((connection) => connection.provider === provider && connection.displayName === name);

async function main(): Promise<void> {
  if (!(await api.reachable())) {
    say(`no Console answers at ${consoleBase}: start the gateway first (npm start), then run npm run demo in another terminal`);
    process.exit(1);
  }
  const existing = await api.list();
  const dataDir = path.resolve(root, process.env.DATA_DIR || 'data');
  const ledger = demoLedger(dataDir);
  const hadLedger = existsSync(ledger.file);
  ledger.keepOnly(new Set(existing.map((connection) => connection.id)));
  if (process.argv.includes('--remove')) {
    const made = new Set(ledger.connections());
    // A demo run from before the list was kept: its hub, phone and iCloud connections, known by their names.
    if (!hadLedger) {
      for (const connection of [find(existing, 'home-assistant', HUB_NAME), find(existing, 'health-auto-export', PHONE_NAME)]) if (connection) made.add(connection.id);
      for (const connection of existing.filter((row) => row.provider === 'icloud' && row.displayName === ICLOUD_DEMO_NAME)) made.add(connection.id);
    }
    for (const id of made) await api.remove(id).catch((error: unknown) => say(`could not remove connection ${id}: ${error instanceof Error ? error.message : String(error)}`));
    ledger.keepOnly(new Set((await api.list()).map((connection) => connection.id)));
    say(`removed the ${made.size} connections the demo made and everything they cached; nothing else`);
    return;
  }
  /** The demo's earlier connections of a provider that this run replaced with new ones (their stand-ins forgot them). */
  const replaceEarlier = async (provider: string, made: readonly string[]) => {
    if (made.length === 0) return;
    const earlier = existing.filter((row) => row.provider === provider && ledger.connections().includes(row.id) && !made.includes(row.id));
    for (const row of earlier) await api.remove(row.id).catch(() => undefined);
    ledger.keepOnly(new Set((await api.list()).map((connection) => connection.id)));
    if (earlier.length > 0) say(`removed the ${earlier.length} ${provider} connection(s) an earlier demo run made, which this run replaced`);
  };

  const hub = await startHomeAssistantDouble({ port: hubPort, token: HUB_TOKEN });
  say(`demo hub (a local Home Assistant double) on ${hub.url}`);
  const credentials = { baseUrl: hub.url, token: HUB_TOKEN };
  const connectedAt = Date.now();
  // The demo's own hub and phone: from its list, or (a run from before the list was kept) by their names.
  const ownOrNamed = (provider: string, name: string) =>
    existing.find((row) => row.provider === provider && ledger.connections().includes(row.id)) ?? (hadLedger ? undefined : find(existing, provider, name));
  const knownHub = ownOrNamed('home-assistant', HUB_NAME);
  const hubConnection = knownHub
    ? (await api.update(knownHub.id, { credentials, syncIntervalMinutes: 1 })).connection
    : (await api.create({ provider: 'home-assistant', displayName: HUB_NAME, credentials, syncIntervalMinutes: 1 })).connection;
  ledger.add([hubConnection.id]);
  say(`${knownHub ? 'reconnected' : 'connected'} "${HUB_NAME}" (connection ${hubConnection.id}); syncing every minute`);

  const knownPhone = ownOrNamed('health-auto-export', PHONE_NAME);
  if (knownPhone?.status === 'paused') await api.act(knownPhone.id, 'resume');
  const phone = knownPhone ? await api.rotateSecret(knownPhone.id) : await api.create({ provider: 'health-auto-export', displayName: PHONE_NAME });
  ledger.add([phone.connection.id]);
  const ingestUrl = `${consoleBase}/api/ingest/${phone.connection.id}`;
  say(`connected "${PHONE_NAME}"; it pushes to ${ingestUrl} with its secret (shown once, kept by this demo)`);

  const synced = await waitFor('the first sync of the demo hub', async () => {
    const connection = (await api.list()).find((candidate) => candidate.id === hubConnection.id);
    if (connection?.lastError) say(`the hub sync reports: ${connection.lastError}`);
    return connection?.lastSyncedAt && connection.actionCount > 0 && Date.parse(connection.lastSyncedAt) >= connectedAt - 1_000 ? connection : undefined;
  });
  say(`synced: the hub's entities are in the cache, and ${synced.actionCount} actions are listed (home.<domain>.<service>)`);

  // The bank-link bridge: a setup token is claimed once, after its claim host is shown. A demo claim (from
  // this machine, of a bridge on loopback) lets the sync-worker take this local http bridge for it alone.
  const bridge = await startSimplefinDouble();
  const setupToken = bridge.issueSetupToken();
  const claimAt = `${consoleBase}/api/connect/simplefin/claim`;
  const claimBody = (body: Record<string, unknown>) => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const shown = (await (await fetch(claimAt, claimBody({ setupToken }))).json()) as { claimHost?: string };
  say(`demo bank-link bridge on ${bridge.url}; its setup token claims at ${shown.claimHost ?? '?'}`);
  const claimed = (await (await fetch(claimAt, claimBody({ setupToken, confirmHost: shown.claimHost, displayName: 'Demo bridge', demo: true }))).json()) as { status?: string; error?: string; connections?: Array<{ id: string }> };
  const bridgeConnections = claimed.status === 'signed_in' ? (claimed.connections ?? []).map((row) => row.id) : [];
  await replaceEarlier('simplefin', bridgeConnections);
  ledger.add(bridgeConnections);
  say(claimed.status === 'signed_in' ? 'claimed the setup token once: every bank at the bridge is one finance connection' : `the bridge claim was refused: ${claimed.error ?? 'unknown'}`);

  const redisUrl = await findRedis();
  const live = await createLiveRequester({ REDIS_URL: redisUrl, REDIS_PREFIX: process.env.REDIS_PREFIX ?? 'pcg:' }, createLogger({ name: 'demo', level: 'warn' }));
  try {
    const read = await live.fetchLive({ connectionId: hubConnection.id, object: 'home.entity', where: [{ field: 'domain', op: 'eq', value: 'light' }] });
    say(`live read (fetch_live) of the lights: ${read.rows.map((row) => `${String(row.entity_id)} is ${String(row.state)}`).join(', ')}`);
    const toggled = await live.invokeAction({ connectionId: hubConnection.id, name: 'home.light.toggle', arguments: { entity_id: 'light.kitchen' } });
    say(`action home.light.toggle on light.kitchen → ok: ${String(toggled.ok)}; the hub now says ${hub.state('light.kitchen')?.state}`);
    const rejected = await live.invokeAction({ connectionId: hubConnection.id, name: 'home.light.explode', arguments: { entity_id: 'light.kitchen' } });
    say(`action the hub rejects (home.light.explode) → ${JSON.stringify(rejected)}`);
  } finally {
    await live.close();
  }

  const push = async (payload: unknown) => {
    const response = await sendHealthPush(ingestUrl, phone.ingestSecret ?? '', payload);
    return (await response.json()) as { accepted?: Record<string, number>; error?: string };
  };
  const first = await push(haePayloadV1(dayStart(2)));
  const second = await push(haePayloadV2(dayStart(1)));
  say(`phone pushed two exports (an older and a current app version): ${JSON.stringify(first.accepted ?? first)} and ${JSON.stringify(second.accepted ?? second)}`);
  const again = await push(haePayloadV2(dayStart(1)));
  say(`the same export again updates those rows in place (same source ids), adding none: ${JSON.stringify(again.accepted ?? again)}`);

  const apps = await demoApps(consoleBase, ledger);
  const microsoft = await connectDemoMicrosoft(consoleBase, graphPort, apps, say);
  ledger.add(microsoft?.connectionIds ?? []);
  const googleAndWearable = await connectDemoGoogleAndWearable(consoleBase, { google: googlePort, wearable: wearablePort }, apps, say);
  ledger.add(googleAndWearable.connectionIds);
  const icloud = await connectDemoICloud({ api, dataDir, radicalePort, dovecotPort, say });
  await replaceEarlier('icloud', icloud?.connectionIds ?? []);
  ledger.add(icloud?.connectionIds ?? []);
  const aggregator = await connectDemoAggregator(consoleBase, aggregatorPort, apps, say);
  await replaceEarlier('plaid', aggregator?.connectionIds ?? []);
  ledger.add(aggregator?.connectionIds ?? []);

  // What an earlier run paused on Ctrl-C runs again now that its stand-ins answer.
  const now = await api.list();
  const made = new Set(ledger.connections());
  for (const connection of now.filter((row) => made.has(row.id) && row.status === 'paused')) await api.act(connection.id, 'resume').catch(() => undefined);

  // Keep the sources alive: the hub's sensors drift (the next sync fetches only that), the phone pushes.
  const drift = setInterval(() => {
    hub.setState('sensor.kitchen_temperature', (20 + Math.random() * 3).toFixed(1));
  }, 20_000);
  const pushes = setInterval(() => void push(haePayloadV2(dayStart(0))).catch(() => undefined), 60_000);

  let stopping = false;
  const stop = async () => {
    if (stopping) process.exit(1);
    stopping = true;
    clearInterval(drift);
    clearInterval(pushes);
    // With their stand-ins gone, the demo's connections would only fail: pause all it made until the next demo.
    for (const id of ledger.connections()) await api.act(id, 'pause').catch(() => undefined);
    await hub.close();
    await microsoft?.close();
    await googleAndWearable.close();
    await icloud?.close();
    await aggregator?.close();
    await bridge.close();
    say('paused the demo connections; run npm run demo again to resume them, or npm run demo -- --remove to delete them');
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
  // Said once Ctrl-C is handled: whoever reads this line may press it at once.
  say('the demo hub and phone keep running (the hub changes every 20 s, the phone pushes every minute); Ctrl-C stops them');
}

main().catch((error: unknown) => {
  say(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
