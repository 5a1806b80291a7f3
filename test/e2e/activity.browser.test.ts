import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { rollUpActivityOnce } from '@pcg/shared/activity';
import { buildAuditRow, insertAuditRows } from '@pcg/shared/audit';
import { sql } from '@pcg/shared/db';
import { useTestEnvironment } from '@pcg/testkit/testing';
import { collectingAudit, startTestConsole, type TestConsole } from '../../services/console/test/helpers.ts';
import { closeScreen, launchChromium, openScreen, screenshot } from './browser.ts';

// Issue 41 in Chromium: the activity screen's drawn figures and its table against counts taken from audit_log
// itself, and the alerts screen's count and acknowledge against activity_alerts.
const testEnv = useTestEnvironment();
let consoleApp: TestConsole;
let browser: { context: BrowserContext; close(): Promise<void> };

const daysAgo = (days: number) => new Date(Date.now() - days * 86_400_000).toISOString().slice(0, 10);

async function oldRows(agent: string, sector: string | null, decision: 'allow' | 'deny', count: number, day: string, object?: string): Promise<void> {
  await testEnv.db.query(sql.unsafe`
    INSERT INTO audit_log (user_id, agent_id, tool, sector, decision, args, outcome, request_id, created_at)
    SELECT 1, ${agent}, 'query', ${sector}, ${decision}, ${JSON.stringify(object ? { object } : {})}::jsonb, 'ok', gen_random_uuid()::text, ${`${day}T12:00:00Z`}::timestamptz
    FROM generate_series(1, ${count}::int)`);
}

const call = (agentId: string, sector: string, decision: 'allow' | 'deny') =>
  buildAuditRow({ agentId, tool: 'query', sector, decision, denyReason: decision === 'deny' ? 'sector not granted' : null, outcome: 'ok' }).row;

async function rollUpAll(): Promise<void> {
  while ((await rollUpActivityOnce(testEnv.db)).rows > 0);
}

beforeAll(async () => {
  await oldRows('claude', 'finance', 'allow', 7, daysAgo(3), 'finance.transaction');
  await oldRows('claude', 'mail', 'allow', 4, daysAgo(3));
  await oldRows('claude', 'mail', 'deny', 2, daysAgo(3));
  await oldRows('claude', 'health', 'allow', 12, daysAgo(10));
  await oldRows('claude', null, 'allow', 3, daysAgo(10));
  await oldRows('cursor', 'calendar', 'allow', 5, daysAgo(1));
  await oldRows('cursor', 'home', 'deny', 1, daysAgo(29));
  // Older than the screen's 30 days: counted in the rollup, not drawn.
  await oldRows('cursor', 'home', 'allow', 9, daysAgo(45));
  await rollUpAll();
  // After the first start: a new sector for claude and a refusal burst for cursor.
  await insertAuditRows(testEnv.db, [call('claude', 'contacts', 'allow'), ...Array.from({ length: 10 }, () => call('cursor', 'finance', 'deny'))]);
  await rollUpAll();
  await testEnv.db.query(sql.unsafe`
    INSERT INTO connections (user_id, provider, sector, display_name, sync_interval_minutes, last_synced_at)
    VALUES (1, 'google', 'calendar', 'Stale calendar', 60, now() - interval '3 hours')`);
  consoleApp = await startTestConsole(testEnv, collectingAudit().recorder);
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await consoleApp?.close();
});

const CountSchema = z.object({ agent: z.string(), day: z.string(), sector: z.string(), calls: z.number(), denied: z.number() });

/** The counts the screen must show, from audit_log directly: the last 30 UTC days, agents only. */
const recordCounts = () =>
  testEnv.db.any(sql.type(CountSchema)`
    SELECT agent_id AS agent, to_char((created_at AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD') AS day, coalesce(sector, 'none') AS sector,
           count(*)::int8 AS calls, (count(*) FILTER (WHERE decision = 'deny'))::int8 AS denied
    FROM audit_log
    WHERE agent_id IS NOT NULL AND agent_id <> 'operator' AND created_at >= (now() AT TIME ZONE 'UTC')::date - 29
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`);

/** The bar's computed fill, read in the page (the test's own types have no DOM). */
const fillOf = (bar: unknown) => (globalThis as unknown as { getComputedStyle(element: unknown): { fill: string } }).getComputedStyle(bar).fill;

const byKey = (rows: ReadonlyArray<z.infer<typeof CountSchema>>) => [...rows].sort((a, b) => `${a.agent}|${a.day}|${a.sector}`.localeCompare(`${b.agent}|${b.day}|${b.sector}`));

describe('the activity screen in Chromium (issue 41)', { tags: ['needs-chromium'] }, () => {
  it('draws each agent’s calls per day stacked by sector with refusals marked, equal to the counts in audit_log, and the same numbers as a table', async () => {
    const opened = await openScreen(browser.context, consoleApp.address, 'activity');
    const { page } = opened;
    const drawn = await page.$$eval('svg.activity-chart rect.bar', (bars) =>
      bars.map((bar) => ({
        agent: bar.closest('svg')?.getAttribute('data-agent') ?? '',
        day: bar.getAttribute('data-day') ?? '',
        sector: bar.getAttribute('data-sector') ?? '',
        calls: Number(bar.getAttribute('data-calls')),
        denied: Number(bar.getAttribute('data-denied')),
        height: Number(bar.getAttribute('height')),
      })),
    );
    const expected = byKey(await recordCounts());
    expect(byKey(drawn.map(({ height: _height, ...count }) => count))).toEqual(expected);
    expect(expected.some((count) => count.day === daysAgo(45))).toBe(false);
    // Heights are proportional to the calls within one agent's figure.
    for (const agent of ['claude', 'cursor']) {
      const bars = drawn.filter((bar) => bar.agent === agent);
      const ratios = bars.map((bar) => bar.height / bar.calls);
      for (const ratio of ratios) expect(ratio).toBeCloseTo(ratios[0] ?? 0, 6);
    }
    // A refusal mark above each day with refusals, carrying that day's refusals.
    const marks = await page.$$eval('svg.activity-chart path.refusal-mark', (paths) =>
      paths.map((path) => ({ agent: path.closest('svg')?.getAttribute('data-agent'), day: path.getAttribute('data-day'), denied: Number(path.getAttribute('data-denied')) })),
    );
    const deniedDays = new Map<string, number>();
    for (const count of expected) if (count.denied > 0) deniedDays.set(`${count.agent}|${count.day}`, (deniedDays.get(`${count.agent}|${count.day}`) ?? 0) + count.denied);
    expect(new Map(marks.map((mark) => [`${mark.agent}|${mark.day}`, mark.denied]))).toEqual(deniedDays);
    // The same numbers as text.
    const tabled = await page.$$eval('.activity-agent', (sections) =>
      sections.flatMap((section) =>
        [...section.querySelectorAll('tbody tr')].map((row) => {
          const cells = [...row.querySelectorAll('td')].map((cell) => cell.textContent ?? '');
          return { agent: section.getAttribute('data-agent') ?? '', day: cells[0] ?? '', sector: cells[1] ?? '', calls: Number(cells[2]), denied: Number(cells[3]) };
        }),
      ),
    );
    expect(byKey(tabled)).toEqual(expected);
    // Bars take their colours from the stylesheet in either theme (no inline style under the CSP).
    const fill = await page.$eval('svg.activity-chart rect.sector-finance', fillOf);
    expect(fill).toBe('rgb(31, 111, 235)');
    await screenshot(page, 'activity-light');
    await closeScreen(opened);
    const dark = await openScreen(browser.context, consoleApp.address, 'activity', 1280, { colorScheme: 'dark' });
    expect(await dark.page.$eval('svg.activity-chart rect.sector-finance', fillOf)).toBe('rgb(88, 166, 255)');
    await screenshot(dark.page, 'activity-dark');
    await closeScreen(dark);
  });

  it('lists first and last use per sector and object, and each connection’s freshness against its interval', async () => {
    const opened = await openScreen(browser.context, consoleApp.address, 'activity');
    const text = await opened.page.locator('#screen-activity').innerText();
    expect(text).toContain('finance.transaction');
    expect(text).toMatch(/Stale calendar[\s\S]*stale: 120 min past its interval/);
    await closeScreen(opened);
  });

  it('shows the count of new alerts in the navigation, lists them, and marks one seen', async () => {
    const countNew = () => testEnv.db.oneFirst(sql.type(z.object({ n: z.number() }))`SELECT count(*)::int AS n FROM activity_alerts WHERE state = 'new'`);
    const before = await countNew();
    // claude's first use of contacts, cursor's refusal burst; no alert from the rows before the first start.
    const kinds = await testEnv.db.anyFirst(sql.type(z.object({ kind: z.string() }))`SELECT kind || ':' || agent_id AS kind FROM activity_alerts ORDER BY 1`);
    expect(kinds).toEqual(['first_sector:claude', 'refusal_burst:cursor']);
    const opened = await openScreen(browser.context, consoleApp.address, 'alerts');
    const { page } = opened;
    await expect.poll(() => page.locator('nav a[href="#alerts"]').textContent()).toBe(`Alerts (${before} new)`);
    await expect.poll(() => page.locator('#screen-alerts tbody tr').count()).toBe(2);
    await page.getByRole('button', { name: /Mark seen: claude used contacts for the first time/ }).click();
    await expect.poll(countNew).toBe(before - 1);
    await expect.poll(() => page.locator('nav a[href="#alerts"]').textContent()).toBe(`Alerts (${before - 1} new)`);
    await closeScreen(opened);
  });

  it('saves a notification destination from the alerts screen without ever showing its address again', async () => {
    const opened = await openScreen(browser.context, consoleApp.address, 'alerts');
    const { page } = opened;
    await page.getByLabel(/Destination address/).fill('https://ntfy.example/pcg-secret-topic');
    await page.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => page.locator('#alert-destination-status').textContent()).toMatch(/^Alerts and a daily digest go to the ntfy topic saved /);
    expect(await page.locator('body').innerText()).not.toContain('pcg-secret-topic');
    expect(await page.getByLabel(/Destination address/).inputValue()).toBe('');
    const kind = await testEnv.db.oneFirst(sql.type(z.object({ kind: z.string() }))`SELECT kind FROM alert_destination`);
    expect(kind).toBe('ntfy');
    await closeScreen(opened);
  });

  it.each([
    { width: 1280, height: 800, scheme: 'light' as const },
    { width: 1280, height: 800, scheme: 'dark' as const },
    { width: 390, height: 844, scheme: 'light' as const },
    { width: 390, height: 844, scheme: 'dark' as const },
  ])('at $width px in the $scheme theme the activity and alerts screens have no serious or critical axe-core violation and nothing scrolls sideways', async ({ width, height, scheme }) => {
    const axeSource = await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
    const problems: Record<string, { axe: string[]; sideways: boolean }> = {};
    for (const screen of ['activity', 'alerts']) {
      const opened = await openScreen(browser.context, consoleApp.address, screen, width, { height, colorScheme: scheme });
      const { page } = opened;
      await page.evaluate(axeSource);
      const violations = await page.evaluate<Array<{ id: string; impact: string | null; nodes: Array<{ target: string[] }> }>>(
        `window.axe.run({ include: ['#main'] }, { resultTypes: ['violations'] }).then((result) => result.violations)`,
      );
      const [scrollWidth, innerWidth] = await page.evaluate<[number, number]>(`[document.scrollingElement.scrollWidth, window.innerWidth]`);
      problems[screen] = {
        axe: violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical').map((violation) => `${violation.id}: ${violation.nodes.map((node) => node.target.join(' ')).join('; ')}`),
        sideways: scrollWidth > innerWidth,
      };
      await screenshot(page, `${screen}-${width}-${scheme}`);
      await closeScreen(opened);
    }
    expect(problems).toEqual({ activity: { axe: [], sideways: false }, alerts: { axe: [], sideways: false } });
  });
});
