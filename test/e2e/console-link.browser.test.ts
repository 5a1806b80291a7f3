import { randomBytes } from 'node:crypto';
import type { BrowserContext, Page, Response } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@pcg/shared/config';
import { createConnectionQueries } from '@pcg/shared/connections';
import { createOriginRebaser } from '@pcg/shared/providers';
import { createSignInQueries } from '@pcg/shared/sign-ins';
import { startPlaidDouble, type PlaidDouble } from '@pcg/testkit/doubles';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { startConsole, type RunningConsole } from '../../services/console/src/service.ts';
import { syncWorkerConfigSchema } from '../../services/sync-worker/src/config.ts';
import { plaidAppLoader } from '../../services/sync-worker/src/connectors/plaid/plaid-app.ts';
import { defaultConnectors } from '../../services/sync-worker/src/connectors/registry.ts';
import { startSyncWorker, type RunningSyncWorker } from '../../services/sync-worker/src/service.ts';
import { closeScreen, launchChromium, openScreen, screenshot, type OpenedScreen } from './browser.ts';

// The bank aggregator's hosted link through the Console page in Chromium: the application saved in
// Settings, "Link a bank" through the aggregator's hosted page (the double's page links its demo bank
// on open and sends the browser back), and "Repair the bank login" in update mode.
const testEnv = useTestEnvironment();
const key = randomBytes(32);
const PROVIDER = 'Bank aggregator (Plaid)';

let aggregator: PlaidDouble;
let consoleService: RunningConsole;
let worker: RunningSyncWorker;
let browser: { context: BrowserContext; close(): Promise<void> };

beforeAll(async () => {
  aggregator = await startPlaidDouble();
  const env = testEnv.env({ CREDENTIALS_KEY: key.toString('base64'), REST_PORT: '0', SOURCE_TIMEOUT_MS: '2000', SYNC_BACKOFF_MS: '100', PLAID_BASE_URL: aggregator.url });
  const config = loadConfig(syncWorkerConfigSchema, env);
  const connectors = defaultConnectors(createOriginRebaser(config), { plaid: { loadApp: plaidAppLoader(testEnv.db, key) } });
  worker = await startSyncWorker(config, createCapturingLogger('sync-worker').log, { connectors });
  consoleService = await startConsole(loadConfig(consoleConfigSchema, env), createCapturingLogger('console').log, { audit: { record: () => undefined } });
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await consoleService?.close();
  await worker?.close();
  await aggregator?.close();
});

const open = (screen: string) => openScreen(browser.context, consoleService.address, screen);
/** No request elsewhere than the Console but the aggregator's hosted page. */
const done = (opened: OpenedScreen) => closeScreen(opened, { allowedForeign: (url) => url.startsWith(`${aggregator.url}/hosted/`) });

/** Follows a link through the Console's start and the aggregator's hosted page, back to the callback's page. */
async function linkThrough(page: Page, link: string): Promise<Response> {
  const answer = page.waitForResponse((response) => response.url().startsWith(`${consoleService.address}/api/connect/plaid/callback?`));
  await page.getByRole('link', { name: link, exact: true }).click();
  const response = await answer;
  await page.locator('#sign-in-message').waitFor();
  return response;
}

const plaidConnections = async () => (await createConnectionQueries(testEnv.db).list()).filter((row) => row.provider === 'plaid');

describe('a bank linked through the aggregator\'s hosted link from the Console page, in Chromium', { tags: ['needs-chromium'] }, () => {
  it('saves the application with its environment in Settings, write-only', async () => {
    const opened = await open('settings');
    const form = opened.page.getByRole('form', { name: `${PROVIDER} application` });
    await expect.poll(() => form.locator('.app-state').textContent()).toContain('Not saved yet');
    await form.getByLabel('Client ID').fill(aggregator.app.clientId);
    await form.getByLabel('Client secret').fill(aggregator.app.secret);
    await form.getByLabel('Environment').selectOption('sandbox');
    await form.getByRole('button', { name: `Save ${PROVIDER} application` }).click();
    await opened.page.getByText(`Saved ${PROVIDER}'s application credentials.`).waitFor();
    expect(await opened.page.content()).not.toContain(aggregator.app.secret);
    await done(opened);
  });

  it('links a bank with the hosted link and shows its finance connection', async () => {
    const opened = await open('connections?add=plaid');
    const { page } = opened;
    const form = page.getByRole('form', { name: `Connect ${PROVIDER}` });
    await expect.poll(() => form.locator('.app-state').textContent()).toBe('Application credentials: saved (change them in Settings).');
    const response = await linkThrough(page, `Link a bank with ${PROVIDER}`);
    expect(response.status()).toBe(200);
    expect(await page.locator('#sign-in-message').textContent()).toBe(`Signed in to ${PROVIDER}: 1 connection made.`);
    expect(await page.locator('#sign-in-connections li').allTextContents()).toEqual([`Chase (${PROVIDER}) · finance`]);
    await screenshot(page, 'sign-in-result-link');
    await page.getByRole('link', { name: 'Back to the Console’s connections' }).click();
    await page.locator('main[data-ready="connections"]').waitFor();
    const card = page.locator('article.card', { hasText: `Chase (${PROVIDER})` });
    expect(await card.count()).toBe(1);
    // After the first sync the card shows the date the bank's consent expires.
    await waitFor(async () => ((await plaidConnections())[0]?.last_synced_at ? true : undefined), 15_000, 'the first sync');
    await page.reload();
    await page.locator('main[data-ready="connections"]').waitFor();
    expect(await card.locator('[data-consent-expires]').count()).toBe(1);
    expect(Date.parse(String(await card.locator('[data-consent-expires]').getAttribute('data-consent-expires')))).toBeGreaterThan(Date.now() + 100 * 86_400_000);
    await done(opened);
    expect((await plaidConnections()).map((row) => [row.sector, row.status])).toEqual([['finance', 'active']]);
  });

  it('offers Repair the bank login on a connection whose bank wants it, and repairs it in update mode', async () => {
    const [connection] = await plaidConnections();
    const [item] = aggregator.items();
    aggregator.requireLogin(item?.itemId ?? '');
    await createSignInQueries(testEnv.db).grantGone(connection?.sign_in_id ?? '', 'the bank asks for its login to be repaired (ITEM_LOGIN_REQUIRED)');
    const opened = await open('connections');
    const { page } = opened;
    const repair = `Repair the bank login of Chase (${PROVIDER})`;
    expect(await page.getByRole('link', { name: repair }).count()).toBe(1);
    await screenshot(page, 'connections-link-needs-repair');
    const response = await linkThrough(page, repair);
    expect(response.status()).toBe(200);
    expect(await page.locator('#sign-in-message').textContent()).toBe(`Sign-in to ${PROVIDER} renewed: 1 connection syncs with it.`);
    await done(opened);
    expect(aggregator.requests.filter((request) => request.path === '/link/token/create').map((request) => request.updateMode)).toEqual([false, true]);
    expect((await plaidConnections()).map((row) => [row.id, row.status])).toEqual([[connection?.id, 'active']]);
  });
});
