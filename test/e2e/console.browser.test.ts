import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import pg from 'pg';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { loadConfig } from '@pcg/shared/config';
import { DEMO_ENTITIES, haePayloadV2, sendHealthPush, startHomeAssistantDouble, type HomeAssistantDouble } from '@pcg/testkit/doubles';
import { MCP_NOT_SERVED } from '@pcg/shared/status';
import { createCapturingLogger, waitFor } from '@pcg/testkit/testing';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { startConsole, type RunningConsole } from '../../services/console/src/service.ts';
import { CROSS_SITE_REFUSED } from '../../services/console/src/web/cross-site.ts';
import { CONSOLE_CSP } from '../../services/console/src/web/security-headers.ts';
import { LEDGER_CSV_HEADERS, RETRY_GUIDANCE } from '../../services/console/web/texts.ts';
import { closeScreen, launchChromium, openScreen, screenshot, watch, type OpenedScreen } from './browser.ts';
import { allStarted } from '../support/all-started.ts';
import { launchStack, type LaunchedStack } from './launched-stack.ts';

const HOSTILE = ['<img src=x onerror=alert(1)>', '"><script>alert(2)</script>', "'><svg onload=alert(3)>"] as const;

let stack: LaunchedStack;
let hub: HomeAssistantDouble;
let browser: { context: BrowserContext; close(): Promise<void> };
let db: pg.Client;

beforeAll(async () => {
  await allStarted([
    launchStack('console').then((started) => (stack = started)),
    startHomeAssistantDouble({ entities: [...DEMO_ENTITIES, { entity_id: 'sensor.hostile', state: HOSTILE[0], attributes: { friendly_name: HOSTILE[1], note: HOSTILE[2] } }] }).then(
      (started) => (hub = started),
    ),
    launchChromium().then((started) => (browser = started)),
  ]);
  await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: stack.consoleUrl });
  db = new pg.Client({ connectionString: stack.databaseUrl });
  await db.connect();
}, 90_000);
afterAll(async () => {
  await db?.end();
  await browser?.close();
  await hub?.close();
  if (stack) expect(await stack.stop()).toBe(0);
});

const open = (screen: string, width?: number) => openScreen(browser.context, stack.consoleUrl, screen, width);
const done = (opened: OpenedScreen, refused: number[] = []) => closeScreen(opened, { refused });

async function get<T>(path: string): Promise<T> {
  const response = await fetch(`${stack.consoleUrl}${path}`);
  expect(response.ok).toBe(true);
  return (await response.json()) as T;
}

type Row = { agent_id: string | null; tool: string; sector: string | null; decision: string; args: unknown };
const auditRows = (query: string, atLeast: number) =>
  waitFor(async () => {
    const rows = await get<Row[]>(`/api/audit?${query}`);
    return rows.length >= atLeast ? rows : undefined;
  }, 10_000, `audit rows for ${query}`);

async function mcpClient(key: string): Promise<Client> {
  const client = new Client({ name: 'browser-test-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(stack.mcpUrl), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  return client;
}

describe('the Console page, in Chromium, on the four real processes', { tags: ['needs-chromium'] }, () => {
  it('serves GET / with every asset from itself, the strict headers, and the Connect band', async () => {
    const response = await fetch(`${stack.consoleUrl}/`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
    expect(CONSOLE_CSP).toContain("frame-ancestors 'none'");
    expect(CONSOLE_CSP).toContain("script-src 'self'");
    expect(CONSOLE_CSP).not.toContain('unsafe-inline');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    expect(response.headers.get('referrer-policy')).toBe('no-referrer');
    const opened = await open('agents');
    const band = opened.page.locator('#connect-band');
    await expect.poll(() => band.textContent()).toContain(stack.mcpUrl);
    await opened.page.getByText('Connection snippets').click();
    await expect.poll(() => band.textContent()).toContain(`claude mcp add --transport http personal-context ${stack.mcpUrl} --header "Authorization: Bearer <agent key>"`);
    expect(await band.textContent()).toContain('"headers"');
    await screenshot(opened.page, 'connect-band-snippets');
    await done(opened);
  });

  it('creates an agent, copies its key once, and the key works with the MCP SDK client until an edit ends its session', async () => {
    const opened = await open('agents');
    const { page } = opened;
    await page.getByLabel('Name', { exact: true }).fill('browser-agent');
    await page.getByRole('checkbox', { name: 'home' }).check();
    await page.getByRole('checkbox', { name: 'finance' }).check();
    await expect.poll(() => page.getByLabel('Expiry').locator('option').allTextContents()).toEqual(['Never', '30 days', '60 days', '90 days']);
    await page.getByLabel('Expiry').selectOption({ label: 'Never' });
    await page.getByRole('button', { name: 'Create agent' }).click();
    const key = (await page.locator('#issued-key').textContent()) ?? '';
    expect(key.length).toBeGreaterThan(40);
    expect(await page.getByText('it will not be shown again').count()).toBe(1);
    await page.getByRole('button', { name: 'Copy key' }).click();
    await expect.poll(() => page.evaluate<string>('navigator.clipboard.readText()')).toBe(key);
    await page.getByRole('cell', { name: 'browser-agent', exact: true }).waitFor();
    await screenshot(page, 'agents-created');

    const client = await mcpClient(key);
    const context = JSON.parse((await client.callTool({ name: 'describe_context', arguments: {} }) as { content: Array<{ text: string }> }).content[0]?.text ?? '{}') as { sectors: string[] };
    expect(context.sectors).toEqual(['finance', 'home']);
    await client.callTool({ name: 'query', arguments: { object: 'mail.message', where: [{ field: 'subject', op: 'eq', value: '=HYPERLINK("http://evil")' }] } });

    // Editing the sectors ends the live session (spec 3.1); the Console writes the names, never `*`.
    await page.getByRole('button', { name: 'Edit browser-agent' }).click();
    await page.getByRole('group', { name: 'Sectors for browser-agent' }).getByRole('checkbox', { name: 'finance' }).uncheck();
    expect(await page.getByText('live sessions').count()).toBeGreaterThan(0);
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Saved browser-agent').waitFor();
    expect((await get<Array<{ name: string; sectors: string[] }>>('/api/agents')).find((agent) => agent.name === 'browser-agent')?.sectors).toEqual(['home']);
    await expect(client.callTool({ name: 'describe_context', arguments: {} })).rejects.toThrow();
    await client.close().catch(() => undefined);

    // Rotation shows a new key once; the old one is refused. Revoke and delete ask first.
    await page.getByRole('button', { name: 'Rotate key: browser-agent' }).click();
    await page.getByRole('button', { name: 'Yes, rotate' }).click();
    await page.getByText('New key for browser-agent').waitFor();
    const rotated = (await page.locator('#issued-key').textContent()) ?? '';
    expect(rotated).not.toBe(key);
    await expect(mcpClient(key)).rejects.toThrow();
    await (await mcpClient(rotated)).close();
    await page.getByRole('button', { name: 'Revoke browser-agent' }).click();
    await page.getByRole('button', { name: 'Yes, revoke' }).click();
    await expect.poll(() => page.getByRole('row', { name: /browser-agent/ }).locator('.state').textContent()).toBe('revoked');
    await page.getByRole('button', { name: 'Delete browser-agent' }).click();
    await page.getByRole('button', { name: 'Yes, delete' }).click();
    await expect.poll(() => page.getByRole('cell', { name: 'browser-agent', exact: true }).count()).toBe(0);
    await done(opened);
  });

  it('shows the calls in The ledger, filters them, pages by 100 and exports only the loaded rows as CSV with formula-looking values escaped, sending nothing to the server', async () => {
    const key = ((await (await fetch(`${stack.consoleUrl}/api/agents`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'ledger-agent', sectors: ['home'] }) })).json()) as { key: string }).key;
    const client = await mcpClient(key);
    await client.callTool({ name: 'get_schema', arguments: { sector: 'home' } });
    await client.callTool({ name: 'query', arguments: { object: 'home.entity', limit: 5 } });
    await client.callTool({ name: 'query', arguments: { object: 'finance.transaction' } });
    await client.close();
    await auditRows('agent=ledger-agent', 3);
    // Values a spreadsheet would run: the record holds whatever acts and sources wrote.
    await db.query(`INSERT INTO audit_log (user_id, agent_id, tool, sector, decision, deny_reason, args, result_count, outcome, request_id)
      VALUES (1, 'ledger-agent', '=HYPERLINK("http://evil")', '+home', 'deny', '-2+3', '{"q":"@SUM(A1)"}', 0, 'error', E'\tcmd'),
             (1, 'ledger-agent', '@tool', 'home', 'allow', NULL, '{}', 1, 'ok', E'\rnext')`);
    const many = Array.from({ length: 120 }, (_, index) => `(1, 'pager', 'query', 'home', 'allow', NULL, '{"n":${index}}', 0, 'ok', 'r${index}')`).join(',');
    await db.query(`INSERT INTO audit_log (user_id, agent_id, tool, sector, decision, deny_reason, args, result_count, outcome, request_id) VALUES ${many}`);

    const opened = await open('ledger');
    const { page } = opened;
    expect(await page.locator('thead th').allTextContents()).toEqual(['Time', 'Who', 'Tool', 'Sector', 'Args', 'Decision']);
    const rows = page.locator('tbody tr');
    await expect.poll(() => rows.count()).toBe(100);
    await page.getByRole('button', { name: 'Load the next 100' }).click();
    await expect.poll(() => rows.count()).toBeGreaterThan(100);
    const time = page.locator('tbody tr time').first();
    expect(await time.getAttribute('title')).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC$/);

    await page.getByRole('textbox', { name: 'Agent', exact: true }).fill('ledger-agent');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => rows.count()).toBe(5);
    await page.getByRole('radio', { name: 'Denied' }).check();
    await expect.poll(() => rows.count()).toBe(2);
    expect(await page.locator('tbody').textContent()).toContain('sector not granted');
    await page.getByRole('radio', { name: 'All' }).check();
    await page.getByRole('combobox', { name: 'Tool', exact: true }).fill('query');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => rows.count()).toBe(2);
    await page.getByRole('combobox', { name: 'Tool', exact: true }).fill('');
    await page.getByRole('combobox', { name: 'Sector', exact: true }).fill('home');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    // Only rows whose sector is exactly `home`: not `+home`, not finance, and no null-sector row.
    await expect.poll(() => page.locator('tbody tr td:nth-child(4)').allTextContents()).toEqual(['home', 'home', 'home']);
    await page.getByRole('combobox', { name: 'Sector', exact: true }).fill('');
    await page.getByRole('combobox', { name: 'Since' }).selectOption({ label: 'Last 24 hours' });
    await expect.poll(() => rows.count()).toBe(5);
    await screenshot(page, 'ledger');

    // The operator's own read leaves no row (spec 6): the CSV is written from the rows on screen, and no request is made.
    const sent: string[] = [];
    page.on('request', (request) => void (request.url().startsWith('blob:') || sent.push(request.url())));
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export CSV' }).click()]);
    expect(sent).toEqual([]);
    const csv = await readFile((await download.path()) ?? '', 'utf8');
    const lines = csv.trimEnd().split('\r\n');
    expect(lines[0]).toBe(LEDGER_CSV_HEADERS.join(','));
    expect(lines).toHaveLength(1 + 5);
    expect(csv).toContain(`'=HYPERLINK(""http://evil"")`);
    expect(csv).toContain(",'+home,");
    expect(csv).toContain(",'-2+3,");
    expect(csv).toContain(",'@tool,");
    expect(csv).toContain(",'\tcmd,");
    expect(csv).toContain(`"'\rnext"`);
    expect(csv).not.toMatch(/(^|,)[=+@-]/m);
    await done(opened);
  });

  it('connects the demo hub and the demo phone, and syncs, pauses, resumes, sets the interval, rotates the secret and removes', async () => {
    const opened = await open('connections?add=home-assistant');
    const { page } = opened;
    const hubForm = page.getByRole('form', { name: 'Connect Home Assistant' });
    await hubForm.getByLabel('Base URL').fill(hub.url);
    await hubForm.getByLabel('Token').fill(hub.token);
    expect(await hubForm.getByLabel('Token').getAttribute('type')).toBe('password');
    await hubForm.getByRole('button', { name: 'Connect Home Assistant' }).click();
    const hubCard = page.getByRole('article', { name: 'Home Assistant' });
    await hubCard.waitFor();
    await waitFor(async () => {
      await page.getByRole('link', { name: 'Status' }).click();
      await page.getByRole('link', { name: 'Connections' }).click();
      await page.locator('main[data-ready="connections"]').waitFor();
      return (await hubCard.locator('.health').textContent()) === 'ok' ? true : undefined;
    }, 15_000, 'the first sync of the hub');

    await hubCard.getByLabel('Sync interval of Home Assistant in minutes').fill('30');
    await hubCard.getByRole('button', { name: 'Save interval' }).click();
    await page.getByText('Sync interval of Home Assistant saved').waitFor();
    await hubCard.getByRole('button', { name: 'Sync now: Home Assistant' }).click();
    await page.getByText('Sync of Home Assistant queued').waitFor();
    await hubCard.getByRole('button', { name: 'Pause Home Assistant' }).click();
    await expect.poll(() => hubCard.locator('.state').textContent()).toBe('paused');
    await hubCard.getByRole('button', { name: 'Resume Home Assistant' }).click();
    await expect.poll(() => hubCard.locator('.state').textContent()).toBe('active');
    expect((await auditRows('tool=set_sync_interval', 1))[0]).toMatchObject({ agent_id: 'operator', decision: 'allow', args: { syncIntervalMinutes: 30 } });

    await page.goto(`${stack.consoleUrl}/#connections?add=health-auto-export`);
    const phoneForm = page.getByRole('form', { name: 'Connect Phone health app (Health Auto Export)' });
    await phoneForm.getByLabel('Name in the Console').fill('My phone');
    await phoneForm.getByRole('button', { name: /^Add / }).click();
    const secret = (await page.locator('#push-secret').textContent()) ?? '';
    const pushUrl = (await page.locator('#push-url').textContent()) ?? '';
    expect(secret.length).toBeGreaterThan(30);
    expect(pushUrl).toMatch(new RegExp(`^${stack.consoleUrl}/api/ingest/[0-9a-f-]{36}$`));
    await screenshot(page, 'connections-push-secret');
    expect((await sendHealthPush(pushUrl, secret, haePayloadV2())).status).toBe(200);

    const phoneCard = page.getByRole('article', { name: 'My phone' });
    await phoneCard.getByRole('button', { name: 'Rotate secret: My phone' }).click();
    await page.getByText('New push secret for My phone').waitFor();
    const rotated = (await page.locator('#push-secret').textContent()) ?? '';
    expect(rotated).not.toBe(secret);
    expect((await sendHealthPush(pushUrl, secret, haePayloadV2())).status).toBe(401);
    await page.reload();
    await page.locator('main[data-ready="connections"]').waitFor();
    expect(await page.locator('#push-secret').count()).toBe(0);
    await expect.poll(() => phoneCard.locator('.health').textContent()).toBe('ok');
    await screenshot(page, 'connections');
    await page.setViewportSize({ width: 390, height: 800 });
    await screenshot(page, 'connections-390');
    await page.setViewportSize({ width: 1280, height: 800 });

    await phoneCard.getByRole('button', { name: 'Remove My phone' }).click();
    expect(await phoneCard.textContent()).toContain('health.sample, health.workout, health.sleep_session');
    await phoneCard.getByRole('button', { name: 'Yes, remove' }).click();
    await expect.poll(() => page.getByRole('article', { name: 'My phone' }).count()).toBe(0);
    await done(opened);
  });

  it('queries every sector in the data inspector beside the schema notes, and records the operator live read', async () => {
    const opened = await open('data');
    const { page } = opened;
    await page.getByLabel('Object').selectOption('home.entity');
    await page.getByRole('button', { name: 'Run query' }).click();
    await expect.poll(() => page.locator('.results').textContent()).toContain('light.kitchen');
    expect(await page.locator('aside.schema').textContent()).toContain('home.entity');
    await page.getByRole('button', { name: 'Read live from the source' }).click();
    await expect.poll(() => page.locator('.results h3').textContent()).toBe('Live read');
    await expect.poll(() => page.locator('.results').textContent()).toContain('switch.coffee_maker');
    await screenshot(page, 'data-inspector');
    await page.setViewportSize({ width: 390, height: 800 });
    await screenshot(page, 'data-inspector-390');
    expect((await auditRows('agent=operator&tool=fetch_live', 1))[0]).toMatchObject({ sector: 'home', decision: 'allow', args: { object: 'home.entity' } });
    await done(opened);
  });

  it('exports a sector as JSON Lines and as CSV, leaving one operator export row each', async () => {
    const opened = await open('export');
    const { page } = opened;
    await page.getByRole('combobox', { name: 'Sector', exact: true }).selectOption('home');
    await page.getByRole('combobox', { name: 'Format' }).selectOption('jsonl');
    const [jsonl] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download' }).click()]);
    const lines = (await readFile((await jsonl.path()) ?? '', 'utf8')).trimEnd().split('\n').map((line) => JSON.parse(line) as { object: string; entity_id?: string });
    expect(lines.length).toBe(DEMO_ENTITIES.length + 1);
    expect(lines.every((line) => line.object === 'home.entity')).toBe(true);
    await page.getByRole('combobox', { name: 'Format' }).selectOption('csv');
    const [csv] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download' }).click()]);
    const text = await readFile((await csv.path()) ?? '', 'utf8');
    expect(text.split('\r\n')[0]?.startsWith('object,')).toBe(true);
    // Issue 34: the page says merged copies are left out unless asked for, and offers them.
    expect(await page.getByText('Merged copies are left out unless you ask for them: rows of an account another connection also delivers, kept once as agents read them.').count()).toBe(1);
    expect(await page.getByRole('checkbox', { name: 'Include merged copies' }).isChecked()).toBe(false);
    await screenshot(page, 'export');
    const rows = await auditRows('agent=operator&tool=export', 2);
    expect(rows.map((row) => row.args)).toEqual([{ sector: 'home', format: 'csv' }, { sector: 'home', format: 'jsonl' }]);
    await done(opened);
  });

  it('saves and clears the public origin; the Connect band shows the bridge URL with the retry guidance', async () => {
    const opened = await open('settings');
    const { page } = opened;
    await page.getByRole('textbox', { name: 'Public origin', exact: true }).fill('https://pcg.example.com/mcp');
    await page.getByRole('button', { name: 'Save origin' }).click();
    await expect.poll(() => page.locator('.messages').first().textContent()).toContain('https://pcg.example.com');
    expect((await get<{ publicOrigin: string | null }>('/api/settings')).publicOrigin).toBeNull();
    await page.getByRole('textbox', { name: 'Public origin', exact: true }).fill('https://pcg.example.com:443');
    await page.getByRole('button', { name: 'Save origin' }).click();
    await page.locator('#bridge-url').waitFor();
    expect(await page.locator('#bridge-url').textContent()).toBe('https://pcg.example.com/mcp');
    await expect.poll(() => page.locator('#connect-band').textContent()).toContain('https://pcg.example.com/mcp');
    expect(await page.locator('#connect-band').textContent()).toContain(RETRY_GUIDANCE);
    await screenshot(page, 'settings-saved');
    await page.getByRole('button', { name: 'Clear origin' }).click();
    await page.getByText('Bridge off').waitFor();
    await expect.poll(() => page.locator('#connect-band').textContent()).not.toContain('pcg.example.com');
    expect((await get<{ publicOrigin: string | null }>('/api/settings')).publicOrigin).toBeNull();
    await done(opened, [400]);
  });

  it("saves the person's time zone, refuses an offset with the server's words, and goes back to the default", async () => {
    const opened = await open('settings');
    const { page } = opened;
    const zoneForm = page.getByRole('form', { name: 'Time zone' });
    await expect.poll(() => page.locator('#time-zone').textContent()).not.toBe('');
    const fallback = await page.locator('#time-zone').textContent();
    await zoneForm.getByRole('textbox', { name: 'Time zone (IANA name)' }).fill('+02:00');
    await zoneForm.getByRole('button', { name: 'Save time zone' }).click();
    await expect.poll(() => zoneForm.locator('.messages').textContent()).toContain('must be an IANA time zone name');
    await zoneForm.getByRole('textbox', { name: 'Time zone (IANA name)' }).fill('Pacific/Auckland');
    await zoneForm.getByRole('button', { name: 'Save time zone' }).click();
    await expect.poll(() => page.locator('#time-zone').textContent()).toBe('Pacific/Auckland');
    expect(await zoneForm.textContent()).toContain('saved here');
    expect(await get<{ timeZone: string; timeZoneSource: string }>('/api/settings')).toMatchObject({ timeZone: 'Pacific/Auckland', timeZoneSource: 'setting' });
    await zoneForm.getByRole('button', { name: 'Use the default' }).click();
    await expect.poll(() => page.locator('#time-zone').textContent()).toBe(fallback);
    expect((await get<{ timeZoneSource: string }>('/api/settings')).timeZoneSource).not.toBe('setting');
    await done(opened, [400]);
  });

  it('shows the status and every screen at 1280×800 and at 390 px, reachable by keyboard', async () => {
    const opened = await open('status');
    const { page } = opened;
    await expect.poll(() => page.locator('main').textContent()).toContain('Served at');
    for (const screen of ['agents', 'connections', 'account-matches', 'ledger', 'data', 'export', 'settings', 'status']) {
      await page.goto(`${stack.consoleUrl}/#${screen}`);
      await page.locator(`main[data-ready="${screen}"]`).waitFor();
      await page.setViewportSize({ width: 1280, height: 800 });
      await screenshot(page, `${screen}-1280`);
      await page.setViewportSize({ width: 390, height: 800 });
      await screenshot(page, `${screen}-390`);
      // Nothing wider than the phone's screen but the scrolling tables.
      expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    }
    await page.setViewportSize({ width: 1280, height: 800 });
    // Every control has a name a screen reader reads.
    const unnamed = await page.evaluate<string[]>(`[...document.querySelectorAll('input, select, textarea, button')]
      .filter((control) => !control.labels?.length && !control.getAttribute('aria-label') && !control.textContent.trim())
      .map((control) => control.outerHTML)`);
    expect(unnamed).toEqual([]);
    // The keyboard reaches the screens: tab to the Ledger link and follow it.
    await page.goto(`${stack.consoleUrl}/#agents`);
    await page.locator('main[data-ready="agents"]').waitFor();
    let reached = false;
    for (let step = 0; step < 40 && !reached; step += 1) {
      await page.keyboard.press('Tab');
      reached = await page.evaluate<boolean>("document.activeElement?.textContent === 'The ledger'");
    }
    expect(reached).toBe(true);
    await page.keyboard.press('Enter');
    await page.locator('main[data-ready="ledger"]').waitFor();
    await done(opened);
  });
});

describe('hostile values from agents and sources', { tags: ['needs-chromium'] }, () => {
  it('are rendered as text in the ledger, the inspector and the connections screen: no script runs, no dialog, no console error', async () => {
    const key = ((await (await fetch(`${stack.consoleUrl}/api/agents`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'hostile-agent', sectors: ['home'] }) })).json()) as { key: string }).key;
    const client = await mcpClient(key);
    for (const value of HOSTILE) {
      await client.callTool({ name: 'query', arguments: { object: value, where: [{ field: value, op: 'eq', value }], cursor: value } });
      await client.callTool({ name: 'get_record', arguments: { object: 'home.entity', id: value } });
      await client.callTool({ name: 'fetch_live', arguments: { object: 'home.entity', id: value } });
    }
    await client.close();
    await auditRows('agent=hostile-agent', 9);
    const { connections } = await get<{ connections: Array<{ id: string; provider: string }> }>('/api/connections');
    const hubId = connections.find((connection) => connection.provider === 'home-assistant')?.id ?? '';
    await db.query('UPDATE connections SET last_error = $1, display_name = $2 WHERE id = $3', [HOSTILE.join(' '), HOSTILE[1], hubId]);

    const ledger = await open('ledger');
    await ledger.page.getByRole('textbox', { name: 'Agent', exact: true }).fill('hostile-agent');
    await ledger.page.getByRole('button', { name: 'Apply filters' }).click();
    await expect.poll(() => ledger.page.locator('tbody tr').count()).toBe(9);
    expect(await ledger.page.locator('tbody').textContent()).toContain(HOSTILE[0]);
    expect(await ledger.page.locator('tbody img, tbody script, tbody svg').count()).toBe(0);
    await screenshot(ledger.page, 'xss-ledger');
    await done(ledger);

    const inspector = await open('data');
    await inspector.page.getByLabel('Object').selectOption('home.entity');
    await inspector.page.getByRole('button', { name: 'Run query' }).click();
    await expect.poll(() => inspector.page.locator('.results').textContent()).toContain(HOSTILE[1]);
    expect(await inspector.page.locator('.results img, .results script, .results svg').count()).toBe(0);
    await screenshot(inspector.page, 'xss-inspector');
    await done(inspector);

    const screen = await open('connections');
    await expect.poll(() => screen.page.locator('#connection-list').textContent()).toContain(HOSTILE[2]);
    expect(await screen.page.locator('#connection-list img, #connection-list script, #connection-list svg').count()).toBe(0);
    await screenshot(screen.page, 'xss-connections');
    await done(screen);
    expect(await screen.page.evaluate(() => 1).catch(() => 'closed')).toBe('closed');
  });
});

describe('another page in the operator’s browser', { tags: ['needs-chromium'] }, () => {
  let other: Server;
  let port: number;
  beforeAll(async () => {
    other = createServer((_request, response) => response.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>elsewhere</title><p>elsewhere</p>'));
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    port = (other.address() as AddressInfo).port;
  });
  afterAll(async () => {
    other.closeAllConnections();
    await new Promise<void>((resolve) => other.close(() => resolve()));
  });

  const state = async () => {
    const [agents, connections, settings, audit] = await Promise.all([get('/api/agents'), get('/api/connections'), get('/api/settings'), db.query('SELECT count(*)::int AS n FROM audit_log')]);
    return { agents, connections, settings, audit: (audit.rows[0] as { n: number }).n };
  };

  it('cannot act on the Console from another site or another localhost port: 403, nothing changed; curl still can', async () => {
    await fetch(`${stack.consoleUrl}/api/agents`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'target', sectors: ['home'] }) });
    const { connections } = await get<{ connections: Array<{ id: string }> }>('/api/connections');
    const id = connections[0]?.id ?? '00000000-0000-4000-8000-000000000000';
    await auditRows('agent=hostile-agent', 9);
    const before = await state();
    const routes: Array<[string, string, unknown?]> = [
      ['POST', '/api/agents', { name: 'intruder', sectors: ['*'] }],
      ['PATCH', '/api/agents/target', { sectors: [] }],
      ['POST', '/api/agents/target/rotate'],
      ['POST', '/api/agents/target/revoke'],
      ['DELETE', '/api/agents/target'],
      ['POST', '/api/connections', { provider: 'health-auto-export' }],
      ['PATCH', `/api/connections/${id}`, { syncIntervalMinutes: 5 }],
      ['POST', `/api/connections/${id}/sync`],
      ['POST', `/api/connections/${id}/pause`],
      ['POST', `/api/connections/${id}/resume`],
      ['POST', `/api/connections/${id}/rotate-secret`],
      ['DELETE', `/api/connections/${id}`],
      ['PUT', '/api/settings', { publicOrigin: 'https://evil.example' }],
      ['PUT', '/api/connect/home-assistant/app', { clientId: 'intruder', clientSecret: 'intruder' }],
      ['POST', '/api/operator/fetch_live', { object: 'home.entity' }],
      ['POST', '/api/export/home', { format: 'jsonl' }],
      ['POST', '/api/data/home', { object: 'home.entity' }],
    ];
    for (const origin of [`http://localhost:${port}`, `http://127.0.0.1:${port}`]) {
      const page = await browser.context.newPage();
      await page.goto(`${origin}/`);
      const statuses: number[] = [];
      page.on('response', (response) => {
        if (response.url().startsWith(stack.consoleUrl)) statuses.push(response.status());
      });
      // What a page can send without a preflight: POST with a simple body, no-cors; and a plain form.
      for (const [method, path, body] of routes.filter(([method]) => method === 'POST')) {
        await page.evaluate(
          async ([url, payload]) => {
            await fetch(url, { method: 'POST', mode: 'no-cors', headers: { 'content-type': 'text/plain' }, body: payload }).catch(() => undefined);
          },
          [`${stack.consoleUrl}${path}`, JSON.stringify(body ?? {})] as const,
        );
        void method;
      }
      await expect.poll(() => statuses.length).toBe(routes.filter(([method]) => method === 'POST').length);
      expect(new Set(statuses)).toEqual(new Set([403]));
      // PATCH, PUT and DELETE need a preflight the Console never grants: the request is not sent.
      for (const [method, path, body] of routes.filter(([method]) => method !== 'POST')) {
        const outcome = await page.evaluate(
          async ([url, verb, payload]) => fetch(url, { method: verb, headers: { 'content-type': 'application/json' }, body: payload }).then((response) => String(response.status), () => 'blocked'),
          [`${stack.consoleUrl}${path}`, method, body === undefined ? undefined : JSON.stringify(body)] as const,
        );
        expect(outcome).toBe('blocked');
      }
      await page.evaluate(`(() => {
        const form = document.createElement('form');
        form.method = 'post';
        form.action = ${JSON.stringify(`${stack.consoleUrl}/api/agents/target/revoke`)};
        document.body.append(form);
        form.submit();
      })()`);
      await page.waitForURL(`${stack.consoleUrl}/api/agents/target/revoke`);
      expect(JSON.parse((await page.locator('body').textContent()) ?? '{}')).toEqual(CROSS_SITE_REFUSED);
      await page.close();
    }
    // The same refusal for every method, as a browser would send it from another port.
    for (const [method, path, body] of routes) {
      const response = await fetch(`${stack.consoleUrl}${path}`, {
        method,
        headers: { 'content-type': 'application/json', 'sec-fetch-site': 'same-site', origin: `http://127.0.0.1:${port}` },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      expect([method, path, response.status]).toEqual([method, path, 403]);
      expect(await response.json()).toEqual(CROSS_SITE_REFUSED);
    }
    expect(await state()).toEqual(before);
    // curl sends neither header and is unaffected.
    const curl = await fetch(`${stack.consoleUrl}/api/agents/target/revoke`, { method: 'POST' });
    expect(curl.status).toBe(200);
  });
});

describe('a Console with no gateway serving MCP', { tags: ['needs-chromium'] }, () => {
  let lonely: RunningConsole;
  beforeAll(async () => {
    const env = {
      DATABASE_URL: stack.databaseUrl,
      REDIS_URL: inject('redisUrl'),
      REDIS_PREFIX: `pcg-lonely-${process.pid}:`,
      REST_PORT: '0',
      CREDENTIALS_KEY: randomBytes(32).toString('base64'),
      LOG_LEVEL: 'silent',
    };
    lonely = await startConsole(loadConfig(consoleConfigSchema, env), createCapturingLogger('console').log);
  });
  afterAll(async () => lonely?.close());

  it('says in the Connect band that MCP is not served and that MCP_HTTP_PORT must be set and the service restarted', async () => {
    const page = await browser.context.newPage();
    const watched = watch(page, lonely.address);
    await page.goto(`${lonely.address}/`);
    await expect.poll(() => page.locator('#connect-band').textContent()).toContain(MCP_NOT_SERVED);
    expect(MCP_NOT_SERVED).toContain('MCP_HTTP_PORT');
    await screenshot(page, 'connect-band-not-serving');
    await done({ page, watched });
  });
});
