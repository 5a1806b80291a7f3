import { randomBytes } from 'node:crypto';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditEvent } from '@pcg/shared/audit';
import { loadConfig } from '@pcg/shared/config';
import { createConnectionQueries } from '@pcg/shared/connections';
import type { AccountMatchList } from '@pcg/shared/finance';
import { startSimplefinDouble, type BridgeAccount, type SimplefinDouble } from '@pcg/testkit/doubles';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { startConsole, type RunningConsole } from '../../services/console/src/service.ts';
import { CLAIM_REFUSED_TITLE } from '../../services/console/web/texts.ts';
import { syncWorkerConfigSchema } from '../../services/sync-worker/src/config.ts';
import { startSyncWorker, type RunningSyncWorker } from '../../services/sync-worker/src/service.ts';
import { SETUP_TOKEN_REFUSED } from '../../services/sync-worker/src/sign-ins/token-claim.ts';
import { closeScreen, launchChromium, openScreen, screenshot, type OpenedScreen } from './browser.ts';

// The bank-link bridge's claim form and the account-match screen of the Console page, in Chromium,
// against two bridge doubles; the Console and the sync-worker run in this process on real Postgres and Redis.
const testEnv = useTestEnvironment();
const key = randomBytes(32);
const HOSTILE = '<img src=x onerror=alert(1)>"><script>alert(2)</script>';
const now = Math.floor(Date.now() / 1000);

const account = (id: string, domain: string, name: string, amount: string): BridgeAccount => ({
  org: { domain, name: domain, 'sfin-url': 'https://bridge.example/simplefin' },
  id,
  name,
  currency: 'USD',
  balance: '10.00',
  'balance-date': now,
  transactions: [{ id: 'T1', posted: now - 86_400, amount, description: 'purchase' }],
});

let bridges: SimplefinDouble[] = [];
let consoleService: RunningConsole;
let worker: RunningSyncWorker;
let browser: { context: BrowserContext; close(): Promise<void> };
const audit: AuditEvent[] = [];

beforeAll(async () => {
  bridges = [
    await startSimplefinDouble({ accounts: [account('A-chk', 'chase.com', 'Checking ••4821', '-10.00'), account('A-sav', 'ally.com', 'Online Savings', '-1.00'), account('A-card', 'capitalone.com', 'Venture ••1111', '-20.00')] }),
    await startSimplefinDouble({ accounts: [account('B-chk', 'chase.com', 'CHK 4821', '-10.00'), account('B-sav', 'ally.com', `Savings ${HOSTILE}`, '-1.00'), account('B-card', 'capitalone.com', 'Venture Rewards', '-20.00')] }),
  ];
  const env = testEnv.env({ CREDENTIALS_KEY: key.toString('base64'), REST_PORT: '0', SOURCE_TIMEOUT_MS: '2000', SYNC_BACKOFF_MS: '100', SIMPLEFIN_ALLOW_LOOPBACK: 'true' });
  worker = await startSyncWorker(loadConfig(syncWorkerConfigSchema, env), createCapturingLogger('sync-worker').log);
  consoleService = await startConsole(loadConfig(consoleConfigSchema, env), createCapturingLogger('console').log, { audit: { record: (event) => void audit.push(event) } });
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await consoleService?.close();
  await worker?.close();
  await Promise.all(bridges.map((bridge) => bridge.close()));
});

const open = (screen: string, width?: number) => openScreen(browser.context, consoleService.address, screen, width);
/** No request anywhere but the Console. `refused`: statuses provoked on purpose. */
const done = (opened: OpenedScreen, refused: number[] = []) => closeScreen(opened, { refused });

const matches = async () => (await (await fetch(`${consoleService.address}/api/finance/account-matches`)).json()) as AccountMatchList;
const bridgeForm = (page: Page) => page.getByRole('form', { name: 'Connect Bank-link bridge (SimpleFIN)' });
const claimPosts = (bridge: SimplefinDouble) => bridge.requests.filter((request) => request.path.startsWith('/simplefin/claim/')).length;

describe('the bridge claim form and the account-match screen, in Chromium', { tags: ['needs-chromium'] }, () => {
  it('claims a setup token only after showing its host and the operator confirming it', async () => {
    const opened = await open('connections?add=simplefin');
    const { page } = opened;
    for (const [i, bridge] of bridges.entries()) {
      if (i > 0) await page.goto(`${consoleService.address}/#connections?add=simplefin`);
      const form = bridgeForm(page);
      await form.getByLabel('Setup token').fill(bridge.issueSetupToken());
      await form.getByLabel('Name in the Console').fill(`Bridge ${i + 1}`);
      await form.getByRole('button', { name: 'Check setup token' }).click();
      const host = new URL(bridge.url).host;
      await expect.poll(() => form.locator('[data-claim-host]').textContent()).toBe(host);
      await expect.poll(() => form.getByText('not https').count()).toBe(1);
      expect(claimPosts(bridge)).toBe(0);
      await form.getByRole('button', { name: `Claim at ${host}` }).click();
      // A claim returns to the new connection's card, the message carried with it (issue 39).
      await page.locator('.notice.ok', { hasText: `Claimed at ${host}. Connected: Bridge ${i + 1}.` }).first().waitFor({ timeout: 15_000 });
      expect(claimPosts(bridge)).toBe(1);
      await page.locator(`article[aria-label="Bridge ${i + 1}"]`).waitFor();
    }
    await screenshot(page, 'bridge-claimed');
    expect((await createConnectionQueries(testEnv.db).list()).map((row) => row.display_name).sort()).toEqual(['Bridge 1', 'Bridge 2']);
    await done(opened);
  });

  it('says plainly that a refused setup token may mean a compromise', async () => {
    const opened = await open('connections?add=simplefin');
    const { page } = opened;
    const stolen = bridges[0]?.issueSetupToken() ?? '';
    // Someone else claimed it first.
    expect((await fetch(Buffer.from(stolen, 'base64').toString(), { method: 'POST' })).status).toBe(200);
    const form = bridgeForm(page);
    await form.getByLabel('Setup token').fill(stolen);
    await form.getByRole('button', { name: 'Check setup token' }).click();
    await form.getByRole('button', { name: /^Claim at / }).click();
    const alert = form.locator('[data-claim-refused]');
    await alert.waitFor({ timeout: 15_000 });
    expect(await alert.getAttribute('role')).toBe('alert');
    expect(await alert.textContent()).toBe(`${CLAIM_REFUSED_TITLE} ${SETUP_TOKEN_REFUSED}`);
    await screenshot(page, 'bridge-claim-refused');
    await done(opened, [403]);
  });

  it('answers each open question with "Same account" or "Keep separate", names shown as text', async () => {
    await waitFor(async () => ((await matches()).open.length === 2 ? true : undefined), 20_000, 'the two open questions');
    const opened = await open('account-matches', 390);
    const { page } = opened;
    const open_ = page.locator('#open-matches article');
    await expect.poll(() => open_.count(), { timeout: 5_000 }).toBe(2);
    expect(await page.locator('#decided-matches').textContent()).toContain('Merged automatically (same last 4)');
    const navLink = page.locator('nav a[href="#account-matches"]');
    await expect.poll(() => navLink.textContent(), { timeout: 5_000 }).toBe('Account matches (2 open)');
    const ally = page.locator('#open-matches article', { hasText: 'ally.com' });
    expect(await ally.textContent()).toContain(`Savings ${HOSTILE}`);
    expect(await page.locator('img, script:not([src])').count()).toBe(0);
    await screenshot(page, 'account-matches-open');
    // Nothing wider than the phone's screen but the scrolling table.
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);

    // What each answer changes (issue 33): the card's one purchase both bridges report counts once, or twice if kept apart.
    const card = page.locator('#open-matches article', { hasText: 'capitalone.com' });
    expect(await card.getByRole('list', { name: 'What each answer changes' }).textContent()).toContain('1 transaction both report counts once');
    expect(await card.textContent()).toContain('Keep separate: agents see both accounts and all 2 transactions of the two');
    await card.getByRole('button', { name: /^Same account:/ }).click();
    await expect.poll(() => page.locator('.messages .notice.ok').textContent(), { timeout: 5_000 }).toContain('are one account: agents see it once, from Bridge 1.');
    await ally.getByRole('button', { name: /^Keep separate:/ }).click();
    await expect.poll(() => page.locator('.messages .notice.ok').textContent(), { timeout: 5_000 }).toContain('are kept separate.');
    await expect.poll(() => open_.count(), { timeout: 5_000 }).toBe(0);
    await expect.poll(() => navLink.textContent(), { timeout: 5_000 }).toBe('Account matches');
    const states = await page.locator('#decided-matches [data-match-state]').allTextContents();
    expect(states.sort()).toEqual(['Kept separate', 'Merged automatically (same last 4)', 'Same account']);
    await screenshot(page, 'account-matches-decided');

    const list = await matches();
    expect(list.open).toEqual([]);
    expect(list.decided.map((match) => [match.institutionDomain, match.state, match.automatic]).sort()).toEqual([
      ['ally.com', 'separate', false],
      ['capitalone.com', 'same', false],
      ['chase.com', 'same', true],
    ]);
    expect(audit.filter((event) => event.tool === 'answer_account_match').map((event) => event.outcome)).toEqual(['ok', 'ok']);
    await done(opened);
  });

  it('changes a decided answer from the table', async () => {
    const opened = await open('account-matches');
    const { page } = opened;
    await page.locator('#decided-matches tr', { hasText: 'capitalone.com' }).getByRole('button', { name: /^Keep separate:/ }).click();
    await expect.poll(async () => (await matches()).decided.find((match) => match.institutionDomain === 'capitalone.com')?.state, { timeout: 5_000 }).toBe('separate');
    await done(opened);
  });
});
