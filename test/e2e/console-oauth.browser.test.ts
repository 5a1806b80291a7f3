import { randomBytes } from 'node:crypto';
import type { BrowserContext, Page, Response } from 'playwright-core';
import { CONNECTORS } from '../../services/sync-worker/src/connectors/registry.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEvent } from '@pcg/shared/audit';
import { loadConfig } from '@pcg/shared/config';
import { createConnectionQueries } from '@pcg/shared/connections';
import { registerExtraProvider } from '@pcg/shared/providers';
import { createSignInQueries, NO_SECTORS_GRANTED, OTHER_ACCOUNT } from '@pcg/shared/sign-ins';
import { createCapturingLogger, useTestEnvironment } from '@pcg/testkit/testing';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { startConsole, type RunningConsole } from '../../services/console/src/service.ts';
import { syncWorkerConfigSchema } from '../../services/sync-worker/src/config.ts';
import { startSyncWorker, type RunningSyncWorker } from '../../services/sync-worker/src/service.ts';
import { startOAuthProviderDouble, type OAuthProviderDouble } from '../support/oauth-provider-double.ts';
import { oauthTestConnector, oauthTestProvider } from '../support/oauth-test-provider.ts';
import { closeScreen, launchChromium, openScreen, screenshot, type OpenedScreen } from './browser.ts';

// An OAuth sign-in through the Console page in Chromium. The test provider is registered in this
// process's catalogue (registerExtraProvider), so the Console and the sync-worker run in this process,
// on real Postgres and Redis, and the browser opens the Console's port; no test hook in the runtime.
const testEnv = useTestEnvironment();
const key = randomBytes(32);
const CLIENT = { clientId: 'browser-test-client-id', clientSecret: 'SENTINEL-browser-client-secret' };
const HOSTILE = '<img src=x onerror=alert(1)>"><script>alert(2)</script>';
const PROVIDER = 'Test OAuth provider';

let double: OAuthProviderDouble;
let consoleService: RunningConsole;
let worker: RunningSyncWorker;
let browser: { context: BrowserContext; close(): Promise<void> };
const audit: AuditEvent[] = [];

beforeAll(async () => {
  double = await startOAuthProviderDouble(CLIENT);
  const provider = oauthTestProvider(double.url);
  registerExtraProvider(provider);
  const env = testEnv.env({ CREDENTIALS_KEY: key.toString('base64'), REST_PORT: '0', SOURCE_TIMEOUT_MS: '2000', SYNC_BACKOFF_MS: '100' });
  const workerLog = createCapturingLogger('sync-worker').log;
  worker = await startSyncWorker(loadConfig(syncWorkerConfigSchema, env), workerLog, {
    connectors: [...CONNECTORS, oauthTestConnector({ provider, apiUrl: double.url, db: testEnv.db, credentialsKey: key, log: workerLog })],
  });
  consoleService = await startConsole(loadConfig(consoleConfigSchema, env), createCapturingLogger('console').log, { audit: { record: (event) => void audit.push(event) } });
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await consoleService?.close();
  await worker?.close();
  await double?.close();
});

const open = (screen: string, width?: number) => openScreen(browser.context, consoleService.address, screen, width);
/** No request elsewhere than the Console but the provider's authorize page the sign-in goes through. */
const done = (opened: OpenedScreen, refused: number[] = []) => closeScreen(opened, { refused, allowedForeign: (url) => url.startsWith(`${double.url}/authorize?`) });

/** Follows a sign-in link: the Console's start, the provider's consent, back to the callback's page. */
async function signInThrough(page: Page, link: string): Promise<Response> {
  const answer = page.waitForResponse((response) => response.url().startsWith(`${consoleService.address}/api/connect/test-oauth/callback?`));
  await page.getByRole('link', { name: link, exact: true }).click();
  const response = await answer;
  await page.locator('#sign-in-message').waitFor();
  return response;
}

const oauthConnections = async () => (await createConnectionQueries(testEnv.db).list()).filter((row) => row.provider === 'test-oauth');

describe('an OAuth sign-in through the Console page, in Chromium', { tags: ['needs-chromium'] }, () => {
  let signInId = '';

  it('saves the provider application credentials in Settings, write-only: the page shows only that they are saved', async () => {
    const opened = await open('settings');
    const { page } = opened;
    const form = page.getByRole('form', { name: `${PROVIDER} application` });
    await expect.poll(() => form.locator('.app-state').textContent()).toContain('Not saved yet');
    expect(await form.locator('[data-redirect-uri]').textContent()).toBe(`${consoleService.address}/api/connect/test-oauth/callback`);
    await form.getByLabel('Client ID').fill(CLIENT.clientId);
    await form.getByLabel('Client secret').fill(CLIENT.clientSecret);
    await form.getByRole('button', { name: `Save ${PROVIDER} application` }).click();
    await page.getByText(`Saved ${PROVIDER}'s application credentials.`).waitFor();
    expect(await form.getByLabel('Client secret').inputValue()).toBe('');
    await done(opened);

    const again = await open('settings');
    const saved = again.page.getByRole('form', { name: `${PROVIDER} application` });
    await expect.poll(() => saved.locator('.app-state').textContent()).toContain('Saved.');
    expect(await saved.getByLabel('Client ID').inputValue()).toBe('');
    const html = await again.page.content();
    expect(html).not.toContain(CLIENT.clientSecret);
    expect(html).not.toContain(CLIENT.clientId);
    await screenshot(again.page, 'settings-provider-app');
    await done(again);
  });

  it('connects with Connect, the provider granting 2 of 3 scopes: the Console shows exactly 2 connections', async () => {
    double.state.grantedScopes = ['Mail.Read', 'Calendars.Read'];
    const opened = await open('connections?add=test-oauth');
    const { page } = opened;
    const form = page.getByRole('form', { name: `Connect ${PROVIDER}` });
    await expect.poll(() => form.locator('.app-state').textContent()).toBe('Application credentials: saved (change them in Settings).');
    expect(await form.locator('[data-redirect-uri]').textContent()).toBe(`${consoleService.address}/api/connect/test-oauth/callback`);
    const response = await signInThrough(page, `Connect ${PROVIDER}`);
    expect(response.status()).toBe(200);
    expect(await page.locator('#sign-in-message').textContent()).toBe(`Signed in to ${PROVIDER}: 2 connections made.`);
    expect(await page.locator('#sign-in-connections li').allTextContents()).toEqual([`${PROVIDER} · calendar`, `${PROVIDER} · mail`]);
    await screenshot(page, 'sign-in-result');

    await page.getByRole('link', { name: 'Back to the Console’s connections' }).click();
    await page.locator('main[data-ready="connections"]').waitFor();
    const cards = page.locator('article.card', { hasText: PROVIDER });
    expect(await cards.count()).toBe(2);
    // One sign-in, holding both connections (issue 39: connections read grouped by their sign-in).
    const signIns = page.locator('section.sign-in-group[data-provider="test-oauth"]');
    expect(await signIns.count()).toBe(1);
    expect(await signIns.locator('h3').textContent()).toContain('account-1');
    expect(await signIns.locator('.sign-in-facts').textContent()).toMatch(/^active/);
    expect(await signIns.locator('article.card').count()).toBe(2);
    await screenshot(page, 'connections-oauth');
    await page.setViewportSize({ width: 390, height: 800 });
    await screenshot(page, 'connections-oauth-390');
    await done(opened);

    const rows = await oauthConnections();
    expect(rows.map((row) => row.sector).sort()).toEqual(['calendar', 'mail']);
    signInId = rows[0]?.sign_in_id ?? '';
  });

  it('says "the sign-in granted no sectors" when the provider grants no usable scope, and makes nothing', async () => {
    double.state.grantedScopes = ['offline_access'];
    double.state.accountId = 'account-2';
    const opened = await open('connections?add=test-oauth');
    const response = await signInThrough(opened.page, `Connect ${PROVIDER}`);
    double.state.accountId = 'account-1';
    expect(response.status()).toBe(422);
    expect(await opened.page.locator('#sign-in-message').textContent()).toBe(NO_SECTORS_GRANTED);
    await screenshot(opened.page, 'sign-in-no-sectors');
    await done(opened, [422]);
    expect(await oauthConnections()).toHaveLength(2);
  });

  it('offers Sign in again on a connection that needs it: another account is refused in words, the same account renews it', async () => {
    const [mail] = (await oauthConnections()).filter((row) => row.sector === 'mail');
    const renamed = await fetch(`${consoleService.address}/api/connections/${mail?.id}`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ displayName: HOSTILE }) });
    expect(renamed.status).toBe(200);
    await createSignInQueries(testEnv.db).grantGone(signInId, `${PROVIDER} refused to renew the access (invalid_grant)`);

    const opened = await open('connections');
    const { page } = opened;
    const again = page.getByRole('link', { name: /^Sign in again for / });
    expect(await again.count()).toBe(2);
    expect(await page.locator('section.sign-in-group[data-provider="test-oauth"] .sign-in-facts').textContent()).toContain('needs sign in');
    await screenshot(page, 'connections-needs-sign-in');

    double.state.grantedScopes = ['Mail.Read', 'Calendars.Read'];
    double.state.accountId = 'account-2';
    const refused = await signInThrough(page, `Sign in again for ${PROVIDER} (calendar)`);
    double.state.accountId = 'account-1';
    expect(refused.status()).toBe(409);
    expect(await page.locator('#sign-in-message').textContent()).toBe(OTHER_ACCOUNT);
    expect((await oauthConnections()).map((row) => row.status)).toEqual(['needs_sign_in', 'needs_sign_in']);

    await page.goto(`${consoleService.address}/#connections`);
    await page.locator('main[data-ready="connections"]').waitFor();
    const renewed = await signInThrough(page, `Sign in again for ${PROVIDER} (calendar)`);
    expect(renewed.status()).toBe(200);
    expect(await page.locator('#sign-in-message').textContent()).toBe(`Sign-in to ${PROVIDER} renewed: 2 connections sync with it.`);
    // A name the operator (or anything) typed is text on the page, never markup.
    expect(await page.locator('#sign-in-connections li').allTextContents()).toContain(`${HOSTILE} · mail`);
    await page.getByRole('link', { name: 'Back to the Console’s connections' }).click();
    await page.locator('main[data-ready="connections"]').waitFor();
    expect(await page.getByRole('link', { name: /^Sign in again for / }).count()).toBe(0);
    await done(opened, [409]);
    expect((await oauthConnections()).map((row) => [row.sign_in_id, row.status])).toEqual([
      [signInId, 'active'],
      [signInId, 'active'],
    ]);
  });

  it('left one operator row per act and no application secret in any', () => {
    expect(audit.filter((event) => event.tool === 'save_provider_app').map((event) => event.outcome)).toEqual(['ok']);
    expect(audit.filter((event) => event.tool === 'sign_in').map((event) => event.outcome)).toEqual(['ok', 'error', 'error', 'ok']);
    expect(JSON.stringify(audit)).not.toContain(CLIENT.clientSecret);
  });
});
