import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '@pcg/shared/db';
import { useTestEnvironment } from '@pcg/testkit/testing';
import { seedDemo } from '../../scripts/demo/seed.ts';
import { startConsoleAndGateway } from '../ops/ops-harness.ts';
import { closeScreen, launchChromium, openScreen, screenshot, type OpenedScreen } from './browser.ts';

// Issue 40 in Chromium: light and dark themes, the phone layout, words instead of API text, isolated values,
// a first run that leads, and axe-core's check, on every screen at 1280×800 and 390×844. A Console and a
// gateway run in this process on real Postgres and Redis; the demo seed fills every screen with data.
const testEnv = useTestEnvironment();
let stack: Awaited<ReturnType<typeof startConsoleAndGateway>>;
let browser: { context: BrowserContext; close(): Promise<void> };
let axeSource: string;

beforeAll(async () => {
  stack = await startConsoleAndGateway(testEnv);
  browser = await launchChromium();
  axeSource = await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await stack?.close();
});

const base = () => stack.console.address;
type Scheme = 'light' | 'dark';
const WIDTHS = [
  { width: 1280, height: 800, label: 'desktop' },
  { width: 390, height: 844, label: 'phone' },
] as const;
const open = (screen: string, width = 1280, height = 800, colorScheme: Scheme = 'light') => openScreen(browser.context, base(), screen, width, { height, colorScheme });
const done = (opened: OpenedScreen) => closeScreen(opened);

async function send<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${base()}${path}`, { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  expect(response.ok).toBe(true);
  return (response.status === 204 ? undefined : await response.json()) as T;
}

/** Every screen of the page, with the add-a-source views (the catalogue and one provider's form). */
const SCREENS = [
  ['agents', 'agents'],
  ['connections', 'connections'],
  ['add-source-catalogue', 'connections?add'],
  ['add-source-form', 'connections?add=home-assistant'],
  ['account-matches', 'account-matches'],
  ['ledger', 'ledger'],
  ['activity', 'activity'],
  ['alerts', 'alerts'],
  ['data', 'data'],
  ['export', 'export'],
  ['settings', 'settings'],
  ['status', 'status'],
] as const;

/** Screens draw some parts after `data-ready` (the band, a list's second read): wait until nothing says Loading. */
async function settled(page: Page): Promise<void> {
  await expect.poll(() => page.evaluate<boolean>(`!document.body.innerText.includes('Loading…')`)).toBe(true);
  await page.locator('#connect-band h2').waitFor();
}

type AxeViolation = { id: string; impact: string | null; help: string; nodes: Array<{ target: string[]; failureSummary?: string }> };

/**
 * axe-core, injected through `page.evaluate`: the DevTools protocol evaluates in the page without going
 * through its Content-Security-Policy (script-src 'self' stays as it is; nothing is added to the page's markup).
 */
async function seriousViolations(page: Page): Promise<string[]> {
  await page.evaluate(axeSource);
  const violations = await page.evaluate<AxeViolation[]>(`window.axe.run(document, { resultTypes: ['violations'] }).then((result) => result.violations)`);
  return violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => `${violation.impact} ${violation.id}: ${violation.help} — ${violation.nodes.map((node) => `${node.target.join(' ')} (${node.failureSummary ?? ''})`).join('; ')}`);
}

/** The text a person reads, without what sits inside a details element or a verbatim `code` value. */
const readableText = (page: Page) =>
  page.evaluate<string>(`(() => {
    const copy = document.body.cloneNode(true);
    for (const hidden of copy.querySelectorAll('details, code, pre, script, noscript, .visually-hidden, datalist, option')) hidden.remove();
    const holder = document.createElement('div');
    holder.style.position = 'absolute';
    holder.style.left = '-99999px';
    holder.style.width = '1000px';
    holder.append(...copy.childNodes);
    document.body.append(holder);
    const text = holder.innerText;
    holder.remove();
    return text;
  })()`);

/** Brand names written in camel case, which are words: everything else in camel case is a machine name. */
const BRANDS = new Set(['iCloud', 'iPhone', 'iOS', 'macOS']);

/** What issue 40 calls API text: a snake_case or camelCase token, a route path, or a body refusal's words. */
function apiWords(text: string): string[] {
  const found = [
    ...text.matchAll(/\b[a-z][a-z0-9]*_[a-z0-9_]+\b/g),
    ...[...text.matchAll(/\b[a-z]+[A-Z][A-Za-z0-9]*\b/g)].filter((match) => !BRANDS.has(match[0])),
    ...text.matchAll(/\/api\/[\w/:-]*/g),
    ...text.matchAll(/invalid body/gi),
  ].map((match) => match[0]);
  return [...new Set(found)];
}

const backgroundAndInk = (page: Page) =>
  page.evaluate<{ background: string; ink: string }>(`(() => ({ background: getComputedStyle(document.documentElement).backgroundColor, ink: getComputedStyle(document.body).color }))()`);

/** Relative luminance of an `rgb(…)` colour (WCAG 2.x). */
function luminance(rgb: string): number {
  const [r, g, b] = (rgb.match(/\d+(\.\d+)?/g) ?? []).slice(0, 3).map((part) => {
    const channel = Number(part) / 255;
    return channel <= 0.03928 ? channel / 12.92 : ((channel + 0.055) / 1.055) ** 2.4;
  }) as [number, number, number];
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}
const contrast = (one: string, two: string) => {
  const [light, dark] = [luminance(one), luminance(two)].sort((a, b) => b - a) as [number, number];
  return (light + 0.05) / (dark + 0.05);
};

describe('a first run that leads', { tags: ['needs-chromium'] }, () => {
  it('with nothing connected, the agents and connections screens lead through connect a source, create an agent and copy the snippet, and say what npm run demo does', async () => {
    for (const screen of ['agents', 'connections'] as const) {
      const opened = await open(screen);
      const { page } = opened;
      await settled(page);
      const guide = page.getByRole('region', { name: 'Getting started' });
      await guide.waitFor();
      const steps = await guide.locator('ol > li').allInnerTexts();
      expect(steps).toHaveLength(3);
      expect(steps[0]).toMatch(/^Connect a source/);
      expect(steps[1]).toMatch(/^Create an agent/);
      expect(steps[2]).toMatch(/^Copy the snippet for your client/);
      // Each step is a link to where it is done.
      expect(await guide.getByRole('link', { name: 'Add a source' }).getAttribute('href')).toBe('#connections?add');
      expect(await guide.getByRole('link', { name: 'Create an agent' }).getAttribute('href')).toBe('#agents');
      expect(await guide.innerText()).toContain('npm run demo');
      expect(await guide.innerText()).toMatch(/demo hub.*demo phone/is);
      await screenshot(page, `first-run-${screen}`);
      await done(opened);
    }
  });
});

describe('every screen with data, in both themes and at both widths', { tags: ['needs-chromium'] }, () => {
  beforeAll(async () => {
    await seedDemo(testEnv.db);
    await send('POST', '/api/agents', { name: 'family-assistant', sectors: ['home', 'calendar'], expiresInDays: 30 });
    await send('POST', '/api/agents', { name: 'money-helper', sectors: ['finance'], expiresInDays: null });
    await send('POST', '/api/connections', { provider: 'health-auto-export', displayName: `Phone of ${'Ω'.repeat(4)}` });
    await testEnv.db.query(sql.unsafe`INSERT INTO audit_log (user_id, agent_id, tool, sector, decision, deny_reason, args, result_count, outcome, request_id)
      VALUES (1, 'family-assistant', 'query', 'home', 'allow', NULL, '{"object":"home.entity","where":{"domain":"light"}}', 3, 'ok', 'r1'),
             (1, 'family-assistant', 'get_record', 'calendar', 'allow', NULL, '{"id":"evt_1"}', 1, 'ok', 'r2'),
             (1, 'money-helper', 'query', 'health', 'deny', 'sector not granted', '{}', 0, 'ok', 'r3'),
             (1, 'family-assistant', 'describe_context', NULL, 'allow', NULL, '{}', 0, 'ok', 'r4')`);
  }, 120_000);

  it('the dark and light backgrounds and text follow the emulated scheme, and the switch overrides it and is remembered', async () => {
    const light = await open('agents', 1280, 800, 'light');
    const lightColours = await backgroundAndInk(light.page);
    await done(light);
    const dark = await open('agents', 1280, 800, 'dark');
    const darkColours = await backgroundAndInk(dark.page);
    // Light: a light background with dark text; dark: the reverse; both at least AA's 4.5:1.
    expect(luminance(lightColours.background)).toBeGreaterThan(0.8);
    expect(luminance(lightColours.ink)).toBeLessThan(0.1);
    expect(luminance(darkColours.background)).toBeLessThan(0.05);
    expect(luminance(darkColours.ink)).toBeGreaterThan(0.7);
    expect(contrast(lightColours.background, lightColours.ink)).toBeGreaterThanOrEqual(4.5);
    expect(contrast(darkColours.background, darkColours.ink)).toBeGreaterThanOrEqual(4.5);

    // The switch: Light on a dark system wins, and is remembered across a reload.
    const { page } = dark;
    await page.getByRole('combobox', { name: 'Theme' }).selectOption({ label: 'Light' });
    expect(await backgroundAndInk(page)).toEqual(lightColours);
    await page.reload();
    await page.locator('main[data-ready="agents"]').waitFor();
    expect(await page.getByRole('combobox', { name: 'Theme' }).inputValue()).toBe('light');
    expect(await backgroundAndInk(page)).toEqual(lightColours);
    // Back to following the system: the dark scheme shows again.
    await page.getByRole('combobox', { name: 'Theme' }).selectOption({ label: 'Follow the system' });
    expect(await backgroundAndInk(page)).toEqual(darkColours);
    await page.reload();
    await page.locator('main[data-ready="agents"]').waitFor();
    expect(await backgroundAndInk(page)).toEqual(darkColours);
    await done(dark);
  });

  const COMBINATIONS = WIDTHS.flatMap((size) => (['light', 'dark'] as const).map((scheme) => ({ ...size, scheme })));
  it.each(COMBINATIONS)(
    'at $width×$height in the $scheme theme, every screen has no serious or critical axe-core violation, nothing scrolls sideways, no API text outside details, and is saved as a screenshot',
    async ({ width, height, label, scheme }) => {
      const problems: Record<string, { axe: string[]; sideways: string | null; apiText: string[] }> = {};
      for (const [name, screen] of SCREENS) {
        const opened = await open(screen, width, height, scheme);
        const { page } = opened;
        await settled(page);
        const [scrollWidth, innerWidth] = await page.evaluate<[number, number]>(`[document.scrollingElement.scrollWidth, window.innerWidth]`);
        // Nor inside the page: no shown box (a table's wrapper included) that scrolls sideways at 390 px.
        const scrollingBoxes = width > 600 ? [] : await page.evaluate<string[]>(`[...document.querySelectorAll('body *')]
          .filter((element) => ['auto', 'scroll'].includes(getComputedStyle(element).overflowX) && element.getClientRects().length > 0 && element.scrollWidth > element.clientWidth + 1)
          .map((element) => element.tagName.toLowerCase() + '.' + element.className)`);
        problems[name] = {
          axe: await seriousViolations(page),
          sideways: scrollWidth <= innerWidth && scrollingBoxes.length === 0 ? null : `${scrollWidth} > ${innerWidth} ${scrollingBoxes.join(' ')}`,
          apiText: apiWords(await readableText(page)),
        };
        await screenshot(page, `${name}-${label}-${scheme}`);
        await done(opened);
      }
      expect(problems).toEqual(Object.fromEntries(SCREENS.map(([name]) => [name, { axe: [], sideways: null, apiText: [] }])));
    },
    240_000,
  );

  it('the CSP is unchanged while axe-core runs: script only from the Console itself, nothing inline', async () => {
    const response = await fetch(`${base()}/`);
    const csp = response.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|nonce-|sha256-/);
  });

  it('on a phone the navigation folds behind one button, and the ledger shows each row as a card with its six columns', async () => {
    const opened = await open('ledger', 390, 844);
    const { page } = opened;
    await settled(page);
    const toggle = page.getByRole('button', { name: /^Screens/ });
    expect(await toggle.getAttribute('aria-expanded')).toBe('false');
    expect(await page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: 'Agents' }).isVisible()).toBe(false);
    await toggle.click();
    expect(await page.getByRole('navigation', { name: 'Screens' }).getByRole('link', { name: 'Agents' }).isVisible()).toBe(true);
    await toggle.click();
    // Content starts within the first 40 % of the window, not 300 px down behind the header.
    const mainTop = await page.evaluate<number>(`document.querySelector('#screen-title').getBoundingClientRect().top`);
    expect(mainTop).toBeLessThan(844 * 0.4);
    const row = page.locator('tbody tr', { hasText: 'sector not granted' });
    const cells = await page.evaluate<Array<[string | null, string]>>(`[...[...document.querySelectorAll('tbody tr')].find((row) => row.textContent.includes('sector not granted')).querySelectorAll('td')].map((td) => [td.getAttribute('data-label'), getComputedStyle(td, '::before').content])`);
    expect(cells.map(([label]) => label)).toEqual(['Time', 'Who', 'Tool', 'Sector', 'Args', 'Decision']);
    expect(cells.map(([, before]) => before)).toEqual(['"Time: "', '"Who: "', '"Tool: "', '"Sector: "', '"Args: "', '"Decision: "']);
    // Every cell is inside the window, the Decision included (it used to be off-screen to the right).
    const boxes = await page.evaluate<number[]>(`[...[...document.querySelectorAll('tbody tr')].find((row) => row.textContent.includes('sector not granted')).querySelectorAll('td')].map((td) => td.getBoundingClientRect().right)`);
    for (const right of boxes) expect(right).toBeLessThanOrEqual(390);
    expect(await row.locator('td').last().isVisible()).toBe(true);
    await done(opened);
  });

  it('a refusal is said in words about the data; the Console\'s own words, field names and all, only under a details element', async () => {
    const opened = await open('settings');
    const { page } = opened;
    const form = page.getByRole('form', { name: 'Time zone' });
    await form.getByLabel('Time zone (IANA name)').fill('+02:00');
    await form.getByRole('button', { name: /^Save/ }).first().click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    const raw = await alert.locator('details code').textContent();
    // What the route answered (spec-side text) is kept, folded away.
    expect(raw).toContain('send null');
    expect(raw).toMatch(/^timeZone must be/);
    const visible = await page.evaluate<string>(`(() => {
      const copy = document.querySelector('[role="alert"]').cloneNode(true);
      copy.querySelector('details')?.remove();
      return copy.textContent;
    })()`);
    expect(visible).toMatch(/^The time zone must be an IANA time zone name/);
    expect(visible).not.toMatch(/send null|timeZone|invalid body/);
    expect(await alert.locator('details').getAttribute('open')).toBeNull();
    await screenshot(page, 'settings-refusal-in-words');
    await closeScreen(opened, { refused: [400] });
  });

  it('a right-to-left override in a display name does not reorder the text around it, is shown as a visible mark, and a 200-character unbroken name does not spill', async () => {
    const override = '\u202E';
    const tricky = `Family ${override}exe.tnegA`;
    const long = 'W'.repeat(200);
    const { connection: one } = await send<{ connection: { id: string } }>('POST', '/api/connections', { provider: 'health-auto-export', displayName: tricky });
    const { connection: two } = await send<{ connection: { id: string } }>('POST', '/api/connections', { provider: 'health-auto-export', displayName: long });
    for (const { width, height } of WIDTHS) {
      const opened = await open('connections', width, height);
      const { page } = opened;
      await settled(page);
      const headingCss = `article[data-connection="${one.id}"] h4`;
      const heading = page.locator(headingCss);
      // The control is written out, never obeyed; the name is isolated.
      expect(await heading.innerText()).toContain('⟨U+202E⟩exe.tnegA');
      expect(await heading.innerText()).not.toContain(override);
      expect(await page.evaluate<string>(`getComputedStyle(document.querySelector(${JSON.stringify(headingCss)} + ' bdi')).unicodeBidi`)).toBe('isolate');
      // The words after the name stay after it: the first letter of " · Phone health app …" sits right of the
      // name's last box on the same line, or on a later line; the name's first letter starts the heading.
      const order = await page.evaluate<{ afterFollows: boolean; nameStartsHeading: boolean }>(`(() => {
        const element = document.querySelector(${JSON.stringify(headingCss)});
        const name = element.querySelector('bdi');
        const after = name.nextElementSibling.firstChild;
        const firstLetter = document.createRange();
        firstLetter.setStart(after, 1);
        firstLetter.setEnd(after, 2);
        const letter = firstLetter.getBoundingClientRect();
        const nameBoxes = [...name.getClientRects()];
        const last = nameBoxes[nameBoxes.length - 1];
        const first = nameBoxes[0];
        return {
          afterFollows: letter.top >= last.bottom - 1 || (Math.abs(letter.top - last.top) < 2 && letter.left >= last.right - 1),
          nameStartsHeading: first.left - element.getBoundingClientRect().left < 2,
        };
      })()`);
      expect(order).toEqual({ afterFollows: true, nameStartsHeading: true });
      // The long name wraps inside its card.
      const [cardRight, widest] = await page.evaluate<[number, number]>(`(() => {
        const card = document.querySelector('article[data-connection="${two.id}"]');
        return [card.getBoundingClientRect().right, Math.max(...[...card.querySelectorAll('*')].map((child) => child.getBoundingClientRect().right))];
      })()`);
      expect(widest).toBeLessThanOrEqual(cardRight);
      const [scrollWidth, innerWidth] = await page.evaluate<[number, number]>(`[document.scrollingElement.scrollWidth, window.innerWidth]`);
      expect(scrollWidth).toBeLessThanOrEqual(innerWidth);
      await screenshot(page, `isolated-names-${width}`);
      await done(opened);
    }
  });
});
