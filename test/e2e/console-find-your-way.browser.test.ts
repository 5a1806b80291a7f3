import { UnrecoverableError, Worker } from 'bullmq';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { sql } from '@pcg/shared/db';
import { blockingConnection } from '@pcg/shared/queues';
import { bullmqPrefix } from '@pcg/shared/redis';
import { useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { startConsoleAndGateway } from '../ops/ops-harness.ts';
import { closeScreen, launchChromium, openScreen, screenshot, SCREENSHOTS, type OpenedScreen } from './browser.ts';

// Issue 39 in Chromium: adding a source in one place with its errors beside their fields, the question
// before a create rotates an agent, a token replaced from its card, a failed job named on Status, and a
// ledger whose filters live in the address. A Console and a gateway run in this process on real Postgres
// and Redis; no sync-worker runs, so a sync job is failed here by a worker of the test's own.
const testEnv = useTestEnvironment();
let stack: Awaited<ReturnType<typeof startConsoleAndGateway>>;
let browser: { context: BrowserContext; close(): Promise<void> };

beforeAll(async () => {
  stack = await startConsoleAndGateway(testEnv);
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

const base = () => stack.console.address;
const open = (screen: string, width?: number) => openScreen(browser.context, base(), screen, width);
const done = (opened: OpenedScreen, refused: number[] = []) => closeScreen(opened, { refused });

async function send<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${base()}${path}`, { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  expect(response.ok).toBe(true);
  return (response.status === 204 ? undefined : await response.json()) as T;
}

type Agent = { name: string; sectors: string[]; expiresAt: string | null; status: string };
const agentNamed = async (name: string) => (await send<Agent[]>('GET', '/api/agents')).find((agent) => agent.name === name);

/** Whether the element's box lies inside the window, as the operator would see it without scrolling. */
const inView = (page: Page, selector: string) =>
  page.evaluate<boolean>(`(() => {
    const box = document.querySelector(${JSON.stringify(selector)})?.getBoundingClientRect();
    return box !== undefined && box.top >= 0 && box.bottom <= window.innerHeight;
  })()`);

describe('adding a source in one place', { tags: ['needs-chromium'] }, () => {
  it('opens the catalogue and then the provider form alone; a refused field is named beside it with every value kept; success returns to the new card, scrolled into view', async () => {
    // Enough cards that a new one at the end would be out of sight without the scroll.
    for (let index = 0; index < 8; index += 1) await send('POST', '/api/connections', { provider: 'health-auto-export', displayName: `Phone ${index}` });
    const opened = await open('connections');
    const { page } = opened;
    await page.getByRole('link', { name: 'Add a source' }).click();
    await page.getByRole('heading', { name: 'Add a source: choose its kind' }).waitFor();
    // The catalogue is built from the descriptors: every provider of GET /api/providers is offered.
    const { providers } = await send<{ providers: Array<{ kind: string }> }>('GET', '/api/providers');
    expect(await page.locator('.catalogue [data-provider]').evaluateAll((tiles) => tiles.map((tile) => tile.getAttribute('data-provider')))).toEqual(providers.map((provider) => provider.kind));
    expect(await page.locator('form').count()).toBe(0);
    await screenshot(page, 'add-source-catalogue');

    await page.getByRole('link', { name: /^Home Assistant/ }).click();
    const form = page.getByRole('form', { name: 'Connect Home Assistant' });
    await form.waitFor();
    // The form alone: no card and no other provider's form on this view.
    expect(await page.locator('form').count()).toBe(1);
    expect(await page.locator('article.card').count()).toBe(0);

    await form.getByLabel('Base URL').fill('http://hub.local:8123/?debug=1');
    await form.getByLabel('Token').fill('long-lived-token');
    await form.getByLabel('Name in the Console').fill('Hall hub');
    await form.getByLabel('Sync every (minutes)').fill('30');
    await form.getByRole('button', { name: 'Connect Home Assistant' }).click();
    // The Console refuses the address; its words appear under the Base URL field, nowhere at the page's top.
    const baseUrlError = form.locator('.field', { has: page.getByLabel('Base URL') }).locator('.field-error');
    await expect.poll(() => baseUrlError.textContent()).toContain('must carry no user name, password, query or fragment');
    expect(await form.getByLabel('Base URL').getAttribute('aria-invalid')).toBe('true');
    expect(await form.getByLabel('Base URL').getAttribute('aria-describedby')).toContain(String(await baseUrlError.getAttribute('id')));
    expect(await form.locator('.field-error').count()).toBe(1);
    // Every value stays, the interval included (it used to come back empty).
    expect(await form.getByLabel('Base URL').inputValue()).toBe('http://hub.local:8123/?debug=1');
    expect(await form.getByLabel('Token').inputValue()).toBe('long-lived-token');
    expect(await form.getByLabel('Name in the Console').inputValue()).toBe('Hall hub');
    expect(await form.getByLabel('Sync every (minutes)').inputValue()).toBe('30');
    await screenshot(page, 'add-source-field-error');

    // An interval the browser can already refuse is named beside its own field, and nothing is sent.
    const posted: string[] = [];
    page.on('request', (request) => void (request.method() === 'POST' && posted.push(request.url())));
    await form.getByLabel('Sync every (minutes)').fill('0');
    await form.getByRole('button', { name: 'Connect Home Assistant' }).click();
    await expect.poll(() => form.locator('.field', { has: page.getByLabel('Sync every (minutes)') }).locator('.field-error').count()).toBe(1);
    expect(posted).toEqual([]);
    expect(await form.getByLabel('Token').inputValue()).toBe('long-lived-token');

    await form.getByLabel('Sync every (minutes)').fill('30');
    await form.getByLabel('Base URL').fill('http://hub.local:8123');
    await form.getByRole('button', { name: 'Connect Home Assistant' }).click();
    await page.waitForURL(/#connections\?card=/);
    const id = decodeURIComponent(new URL(page.url()).hash.split('card=')[1] ?? '');
    const created = (await send<{ connections: Array<{ id: string; displayName: string; syncIntervalMinutes: number }> }>('GET', '/api/connections')).connections.find((connection) => connection.id === id);
    expect(created).toMatchObject({ displayName: 'Hall hub', syncIntervalMinutes: 30 });
    const cardCss = `article[data-connection="${id}"]`;
    await page.locator(cardCss).waitFor();
    expect(await inView(page, cardCss)).toBe(true);
    expect(await page.evaluate<boolean>(`document.activeElement === document.querySelector(${JSON.stringify(cardCss)})`)).toBe(true);
    // The create's own answer is carried to the list (its success, or the warning it came with).
    expect(await page.locator('.messages .notice').count()).toBe(1);
    await screenshot(page, 'add-source-returned-to-card');
    await done(opened, [400]);
  });

  it('reads connections and sign-ins as one list grouped by sign-in, each card with its health, last and next sync and its acts', async () => {
    const opened = await open('connections');
    const { page } = opened;
    const group = page.locator('section.sign-in-group', { hasText: 'Home Assistant · pasted token' });
    const card = group.getByRole('article', { name: 'Hall hub' });
    await card.waitFor();
    const facts = await card.locator('dt').allTextContents();
    expect(facts).toEqual(expect.arrayContaining(['Health', 'Last sync', 'Next sync']));
    for (const name of ['Sync now: Hall hub', 'Pause Hall hub', 'Replace the token or password: Hall hub', 'Check Hall hub against its source', 'Remove Hall hub']) {
      expect(await card.getByRole('button', { name }).count()).toBe(1);
    }
    // The provider is named once, by the sign-in's heading; the card under it says only its name and sector (issue 40).
    expect(await group.locator('h3').textContent()).toContain('Home Assistant');
    expect(await card.locator('h4').textContent()).toBe('Hall hub · home');
    // Push connections have no sign-in: they are listed together, after the sign-ins.
    expect(await page.locator('section.sign-in-group', { hasText: 'Pushed by devices' }).getByRole('article').count()).toBe(8);
    await screenshot(page, 'connections-grouped');
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, 'connections-grouped-390');
    await done(opened);
  });
});

describe('the card\'s Check act', { tags: ['needs-chromium'] }, () => {
  it('calls POST /api/connections/:id/check and shows each step passed or failed with its message', async () => {
    const { connection } = await send<{ connection: { id: string } }>('POST', '/api/connections', { provider: 'health-auto-export', displayName: 'Checked phone' });
    const opened = await open('connections');
    const { page } = opened;
    const card = page.locator(`article[data-connection="${connection.id}"]`);
    const [response] = await Promise.all([
      page.waitForResponse((answer) => answer.url().endsWith(`/api/connections/${connection.id}/check`) && answer.request().method() === 'POST'),
      card.getByRole('button', { name: 'Check Checked phone against its source' }).click(),
    ]);
    // The contract: { ok, steps: [{ step, title, passed, message }], requests }.
    const answer = (await response.json()) as { ok: boolean; steps: Array<{ step: string; title: string; passed: boolean; message: string }>; requests: number };
    const result = card.getByRole('region', { name: 'Check of Checked phone' });
    await result.waitFor();
    const shown = result.locator('li.step');
    expect(await shown.count()).toBe(answer.steps.length);
    for (const [index, step] of answer.steps.entries()) {
      const item = shown.nth(index);
      expect(await item.getAttribute('data-step')).toBe(step.step);
      expect(await item.locator('.step-mark').textContent()).toBe(step.passed ? '✓ passed' : '✗ failed');
      expect(await item.textContent()).toContain(`${step.title}: ${step.message}`);
    }
    // A fresh push connection has its secret but no push yet: both kinds of step are on screen.
    expect(answer.steps.some((step) => step.passed) && answer.steps.some((step) => !step.passed)).toBe(true);
    expect(await result.getAttribute('class')).toContain(answer.ok ? 'passed' : 'failed');
    expect(await result.locator('.check-summary').textContent()).toContain(answer.ok ? 'Every step passed' : 'A step failed');
    await card.screenshot({ path: `${SCREENSHOTS}/connection-check.png` });
    await done(opened);
  });
});

describe('acts that say what they do', { tags: ['needs-chromium'] }, () => {
  it('asks before a create over an existing name rotates the agent, showing the sectors and expiry that change; the route itself still rotates with no confirm flag', async () => {
    await send('POST', '/api/agents', { name: 'twin', sectors: ['finance', 'health'], expiresInDays: 30 });
    const before = await agentNamed('twin');
    const opened = await open('agents');
    const { page } = opened;
    await page.getByLabel('Name', { exact: true }).fill('twin');
    await page.getByRole('checkbox', { name: 'home' }).check();
    await page.getByLabel('Expiry').selectOption({ label: '90 days' });
    await page.getByRole('button', { name: 'Create agent' }).click();
    const question = page.getByRole('group', { name: 'Replace twin' });
    await question.waitFor();
    expect(await question.textContent()).toContain('Creating it again rotates its key');
    expect(await question.locator('[data-change="sectors"]').textContent()).toBe('finance, health → home');
    expect(await question.locator('[data-change="expiry"]').textContent()).toContain('→ expires in 90 days');
    // Nothing is sent before the answer.
    expect(await agentNamed('twin')).toEqual(before);
    await screenshot(page, 'agents-create-over-existing');
    await question.getByRole('button', { name: 'Cancel' }).click();
    expect(await question.count()).toBe(0);
    expect(await agentNamed('twin')).toEqual(before);

    await page.getByRole('button', { name: 'Create agent' }).click();
    await page.getByRole('button', { name: 'Yes, rotate twin and replace its grant' }).click();
    await page.getByText('New key for twin').waitFor();
    expect(await agentNamed('twin')).toMatchObject({ sectors: ['home'], status: 'active' });
    await done(opened);

    // Spec 5 rule 7 stays the route's meaning: a create over an existing name rotates, with no extra flag.
    const rotated = await fetch(`${base()}/api/agents`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'twin', sectors: ['mail'] }) });
    expect(rotated.status).toBe(200);
  });

  it('does not offer Rotate on a revoked agent', async () => {
    await send('POST', '/api/agents', { name: 'gone', sectors: ['home'] });
    await send('POST', '/api/agents/gone/revoke');
    const opened = await open('agents');
    const { page } = opened;
    await page.getByRole('cell', { name: 'gone', exact: true }).waitFor();
    expect(await page.getByRole('button', { name: 'Rotate key: gone' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Rotate key: twin' }).count()).toBe(1);
    await done(opened);
  });

  it('replaces a refused token from the card that needs it: a refusal beside its field, then the connection active again', async () => {
    const { connection } = await send<{ connection: { id: string } }>('POST', '/api/connections', {
      provider: 'home-assistant',
      displayName: 'Attic hub',
      credentials: { baseUrl: 'http://attic.local:8123', token: 'old-token' },
    });
    // What a refused token leaves (the sync-worker marks its sign-in's connections).
    await testEnv.db.query(sql.unsafe`UPDATE connections SET status = 'needs_sign_in', last_error = 'Home Assistant refused the token (401)' WHERE id = ${connection.id}::uuid`);
    const opened = await open('connections');
    const { page } = opened;
    const card = page.locator(`article[data-connection="${connection.id}"]`);
    await card.waitFor();
    expect(await card.textContent()).toContain('Its token or password was refused');
    // Acts that cannot apply are not offered: no Sync now or Pause while it needs the person.
    expect(await card.getByRole('button', { name: 'Sync now: Attic hub' }).count()).toBe(0);
    await card.getByRole('button', { name: 'Replace the token: Attic hub' }).click();
    const form = card.getByRole('form', { name: 'Credentials of Attic hub' });
    await form.getByLabel('Base URL').fill('ftp://attic.local');
    await form.getByLabel('Token').fill('new-token');
    await form.getByRole('button', { name: 'Save credentials' }).click();
    await expect.poll(() => form.locator('.field', { has: page.getByLabel('Base URL') }).locator('.field-error').textContent()).toContain('must be an http:// or https:// address');
    expect(await form.getByLabel('Token').inputValue()).toBe('new-token');
    await screenshot(page, 'replace-token-refused');
    await form.getByLabel('Base URL').fill('http://attic.local:8123');
    await form.getByRole('button', { name: 'Save credentials' }).click();
    await page.getByText('Credentials of Attic hub replaced').waitFor();
    await expect.poll(() => page.locator(`article[data-connection="${connection.id}"] .state`).textContent()).toBe('active');
    await screenshot(page, 'replace-token-done');
    await done(opened, [400]);
  });
});

describe('a status that says what is wrong', { tags: ['needs-chromium'] }, () => {
  it('names a failed sync job with its connection, time and error, says the overall state in words and colour, and leads to the card', async () => {
    const { connection } = await send<{ connection: { id: string } }>('POST', '/api/connections', {
      provider: 'home-assistant',
      displayName: 'Cellar hub',
      credentials: { baseUrl: 'http://cellar.local:8123', token: 'cellar-token' },
    });
    const settings = { REDIS_URL: testEnv.env().REDIS_URL ?? '', REDIS_PREFIX: testEnv.env().REDIS_PREFIX ?? '' };
    // The queued first syncs fail for good, as a source that refuses would leave them.
    const worker = new Worker('sync', async () => {
      throw new UnrecoverableError('the hub answered 401: the token was refused');
    }, { connection: blockingConnection(settings, 'test-failing-worker'), prefix: bullmqPrefix(settings) });
    try {
      await waitFor(async () => {
        const status = await (await fetch(`${base()}/api/status`)).json() as { failedJobs: Array<{ connectionId: string }> };
        return status.failedJobs.some((job) => job.connectionId === connection.id) ? true : undefined;
      }, 15_000, 'the failed sync job');
    } finally {
      await worker.close();
    }
    const opened = await open('status');
    const { page } = opened;
    const overall = page.locator('section.overall');
    expect(await overall.getAttribute('data-overall')).toBe('attention');
    expect(await page.locator('#overall-state').textContent()).toBe('Needs attention');
    // Colour beside the words: the banner's border is the warning colour, not the green of "all is well".
    expect(await page.evaluate<string>(`getComputedStyle(document.querySelector('section.overall')).borderLeftColor`)).toBe('rgb(138, 90, 0)');
    const problem = page.locator('li[data-problem="job_failed"]', { hasText: 'Cellar hub' }).first();
    expect(await problem.textContent()).toContain('the hub answered 401: the token was refused');
    const jobs = page.getByRole('region', { name: 'Failed sync jobs, last 24 hours' });
    const row = jobs.locator('tbody tr', { hasText: 'Cellar hub' }).first();
    expect(await row.textContent()).toContain('the hub answered 401: the token was refused');
    expect(await row.locator('time').count()).toBe(1);
    // Each process with its state, version and uptime.
    const processes = page.getByRole('region', { name: 'Processes' });
    expect(await processes.locator('tbody tr td:first-child').allTextContents()).toEqual(expect.arrayContaining(['console', 'gateway', 'sync-worker', 'audit-writer']));
    expect(await processes.locator('tbody tr', { hasText: 'console' }).textContent()).toContain('0.1.0');
    expect(await processes.locator('tbody tr', { hasText: 'sync-worker' }).textContent()).toContain('not seen');
    await screenshot(page, 'status-needs-attention');
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, 'status-needs-attention-390');
    await page.setViewportSize({ width: 1280, height: 800 });

    // The problem's mending act leads to the connection's card.
    await problem.getByRole('link', { name: 'Open its card' }).click();
    await page.locator('main[data-ready="connections"]').waitFor();
    await page.locator(`article[data-connection="${connection.id}"].arrived`).waitFor();
    await done(opened);
  });

  it('verifies the chain from the status screen when it has not been verified since the Console started', async () => {
    const opened = await open('status');
    const { page } = opened;
    const problem = page.locator('li[data-problem="chain_not_verified"]');
    expect(await problem.count()).toBe(1);
    await problem.getByRole('button', { name: 'Verify the chain' }).click();
    await expect.poll(() => page.locator('li[data-problem="chain_not_verified"]').count()).toBe(0);
    expect(await page.locator('.facts.status').textContent()).toContain('verified intact');
    await done(opened);
  });
});

describe('a ledger that can be bookmarked', { tags: ['needs-chromium'] }, () => {
  it('keeps its filters in the address: a reload keeps them, Back and Forward restore them; the next-page control shows only when more rows remain', async () => {
    await testEnv.db.query(sql.unsafe`INSERT INTO audit_log (user_id, agent_id, tool, sector, decision, deny_reason, args, result_count, outcome, request_id)
      VALUES (1, 'bookmarked', 'query', 'home', 'allow', NULL, '{}', 1, 'ok', 'b1'),
             (1, 'bookmarked', 'query', 'finance', 'deny', 'sector not granted', '{}', 0, 'ok', 'b2')`);
    const opened = await open('ledger');
    const { page } = opened;
    const rows = page.locator('tbody tr');
    const total = await testEnv.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM audit_log`);
    await expect.poll(() => rows.count()).toBe(Math.min(total, 100));
    // Fewer than 100 rows: no next-page control at all (it used to show, disabled).
    expect(await page.getByRole('button', { name: 'Load the next 100' }).isVisible()).toBe(false);

    await page.getByRole('textbox', { name: 'Agent', exact: true }).fill('bookmarked');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/#ledger\?agent=bookmarked$/);
    await expect.poll(() => rows.count()).toBe(2);
    await page.getByRole('radio', { name: 'Denied' }).check();
    await page.waitForURL(/#ledger\?agent=bookmarked&decision=deny$/);
    await expect.poll(() => rows.count()).toBe(1);
    await page.getByRole('combobox', { name: 'Since' }).selectOption({ label: 'Last 24 hours' });
    await page.waitForURL(/#ledger\?agent=bookmarked&since=24h&decision=deny$/);

    // A reload (or the bookmark) shows the same view.
    await page.reload();
    await page.locator('main[data-ready="ledger"]').waitFor();
    expect(await page.getByRole('textbox', { name: 'Agent', exact: true }).inputValue()).toBe('bookmarked');
    expect(await page.getByRole('radio', { name: 'Denied' }).isChecked()).toBe(true);
    expect(await page.getByRole('combobox', { name: 'Since' }).inputValue()).toBe('24h');
    await expect.poll(() => rows.count()).toBe(1);
    expect(await rows.first().textContent()).toContain('sector not granted');
    await screenshot(page, 'ledger-filtered-reloaded');

    await page.goBack();
    await page.waitForURL(/#ledger\?agent=bookmarked&decision=deny$/);
    await expect.poll(() => page.getByRole('combobox', { name: 'Since' }).inputValue()).toBe('');
    await page.goBack();
    await page.waitForURL(/#ledger\?agent=bookmarked$/);
    await expect.poll(() => page.getByRole('radio', { name: 'All' }).isChecked()).toBe(true);
    await expect.poll(() => rows.count()).toBe(2);
    await page.goForward();
    await expect.poll(() => page.getByRole('radio', { name: 'Denied' }).isChecked()).toBe(true);
    await expect.poll(() => rows.count()).toBe(1);

    // More than a page: the control appears, and goes once the last page is in.
    await testEnv.db.query(sql.unsafe`INSERT INTO audit_log (user_id, agent_id, tool, sector, decision, deny_reason, args, result_count, outcome, request_id)
      SELECT 1, 'pages', 'query', 'home', 'allow', NULL, jsonb_build_object('n', n), 0, 'ok', 'p' || n FROM generate_series(1, 101) AS n`);
    await page.goto(`${base()}/#ledger?agent=pages`);
    await expect.poll(() => rows.count()).toBe(100);
    const more = page.getByRole('button', { name: 'Load the next 100' });
    expect(await more.isVisible()).toBe(true);
    await more.click();
    await expect.poll(() => rows.count()).toBe(101);
    expect(await more.isVisible()).toBe(false);
    await done(opened);
  });
});
