import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { expect } from 'vitest';

/** Debian's Chromium (`.ci/run` installs it when absent); nothing is downloaded at install or test time. */
export const CHROMIUM = '/usr/bin/chromium';
export const SCREENSHOTS = path.resolve(import.meta.dirname, '../../test-results/console');

export type Watched = { errors: string[]; dialogs: string[]; foreignRequests: string[] };

/** A fresh Chromium profile, headless, with nothing that phones home. */
export async function launchChromium(): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  const profile = await mkdtemp(path.join(os.tmpdir(), 'pcg-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
    viewport: { width: 1280, height: 800 },
    acceptDownloads: true,
  });
  await mkdir(SCREENSHOTS, { recursive: true });
  return {
    context,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/** Collects script errors, console errors, dialogs and any request that leaves `origin`. */
export function watch(page: Page, origin: string): Watched {
  const watched: Watched = { errors: [], dialogs: [], foreignRequests: [] };
  page.on('pageerror', (error) => watched.errors.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') watched.errors.push(`console: ${message.text()}`);
  });
  page.on('dialog', (dialog) => {
    watched.dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  page.on('request', (request) => {
    const url = request.url();
    if (!url.startsWith(origin) && !url.startsWith('blob:') && !url.startsWith('data:')) watched.foreignRequests.push(url);
  });
  return watched;
}

export async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

export type OpenedScreen = { page: Page; watched: Watched };

/**
 * A Console screen in a new page of `width` × `height` (800) in the emulated `colorScheme` (light), watched from the start, once the screen says it is ready.
 * `screen` may carry its address's query: `connections?add=home-assistant` opens that provider's form.
 */
export async function openScreen(
  context: BrowserContext,
  consoleUrl: string,
  screen: string,
  width = 1280,
  { height = 800, colorScheme = 'light' }: { height?: number; colorScheme?: 'light' | 'dark' } = {},
): Promise<OpenedScreen> {
  const page = await context.newPage();
  await page.setViewportSize({ width, height });
  await page.emulateMedia({ colorScheme });
  const watched = watch(page, consoleUrl);
  await page.goto(`${consoleUrl}/#${screen}`);
  await page.locator(`main[data-ready="${screen.split('?')[0]}"]`).waitFor();
  return { page, watched };
}

/**
 * Closes the page and asserts it ran no script error, no dialog, and no request outside the Console but
 * those `allowedForeign` accepts (a provider's page a sign-in goes through). `refused` names the statuses of
 * answers the flow provoked on purpose (Chromium logs each as a console error).
 */
export async function closeScreen(
  { page, watched }: OpenedScreen,
  { refused = [], allowedForeign = () => false }: { refused?: readonly number[]; allowedForeign?: (url: string) => boolean } = {},
): Promise<void> {
  await page.close();
  const expected = refused.map((status) => `console: Failed to load resource: the server responded with a status of ${status}`);
  expect(watched.errors.filter((error) => !expected.some((text) => error.startsWith(text)))).toEqual([]);
  expect(watched.dialogs).toEqual([]);
  expect(watched.foreignRequests.filter((url) => !allowedForeign(url))).toEqual([]);
}
