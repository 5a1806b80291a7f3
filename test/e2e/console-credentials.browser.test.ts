import { randomBytes } from 'node:crypto';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadConfig } from '@pcg/shared/config';
import { openCredentials } from '@pcg/shared/crypto';
import { sql } from '@pcg/shared/db';
import { createCapturingLogger, useTestEnvironment } from '@pcg/testkit/testing';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { startConsole, type RunningConsole } from '../../services/console/src/service.ts';
import { closeScreen, launchChromium, openScreen, screenshot } from './browser.ts';

// The Console page's iCloud form and the credentials of an existing iCloud connection, in Chromium; the
// Console runs in this process on real Postgres and Redis (no sync-worker: nothing here reaches iCloud).
const testEnv = useTestEnvironment();
const key = randomBytes(32);
const PASSWORD = 'abcd-efgh-ijkl-mnop';
let consoleService: RunningConsole;
let browser: { context: BrowserContext; close(): Promise<void> };

beforeAll(async () => {
  const env = testEnv.env({ CREDENTIALS_KEY: key.toString('base64'), REST_PORT: '0' });
  consoleService = await startConsole(loadConfig(consoleConfigSchema, env), createCapturingLogger('console').log, { audit: { record: () => undefined } });
  browser = await launchChromium();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await consoleService?.close();
});

const credentialsOf = async (connectionId: string) => {
  const row = await testEnv.db.one(sql.type(z.object({ id: z.string(), credentials: z.instanceof(Buffer) }))`
    SELECT s.id::text, s.credentials FROM sign_ins s JOIN connections c ON c.sign_in_id = s.id WHERE c.id = ${connectionId}::uuid`);
  return openCredentials(key, row.credentials, row.id);
};

describe('the iCloud Mail address on the Console page, in Chromium', { tags: ['needs-chromium'] }, () => {
  it('connects iCloud with the optional address left empty, then enters it on the mail connection that needs sign-in', async () => {
    const opened = await openScreen(browser.context, consoleService.address, 'connections?add=icloud');
    const { page } = opened;
    const form = page.getByRole('form', { name: 'Connect Apple iCloud' });
    await form.getByLabel('Apple ID').fill('person@example.com');
    await form.getByLabel('App password').fill(PASSWORD);
    await expect(form.getByLabel('iCloud Mail address (optional)').inputValue()).resolves.toBe('');
    await form.getByRole('button', { name: 'Connect Apple iCloud' }).click();
    const card = page.locator('article[data-connection]', { hasText: 'mail' }).filter({ hasText: 'Apple iCloud' });
    await card.waitFor();
    const mailId = (await card.getAttribute('data-connection')) ?? '';
    expect(await credentialsOf(mailId)).toEqual({ appleId: 'person@example.com', appPassword: PASSWORD });

    // What a refused IMAP login leaves (the sync-worker's words), shown on the card after a reload.
    await testEnv.db.query(sql.unsafe`UPDATE connections SET status = 'needs_sign_in', last_error = 'enter your iCloud Mail address with the credentials; sign in again' WHERE id = ${mailId}::uuid`);
    await page.reload();
    await page.locator('main[data-ready="connections"]').waitFor();
    const refused = page.locator(`article[data-connection="${mailId}"]`);
    await expect(refused.getByText('needs sign in').count()).resolves.toBeGreaterThan(0);
    await refused.getByRole('button', { name: /^Replace the token( or password)?: / }).click();
    const again = refused.getByRole('form', { name: /Credentials of/ });
    await again.getByLabel('Apple ID').fill('person@example.com');
    await again.getByLabel('App password').fill(PASSWORD);
    await again.getByLabel('iCloud Mail address (optional)').fill('Person@iCloud.com');
    await again.getByRole('button', { name: 'Save credentials' }).click();
    await page.getByText(/Credentials of .* replaced/).waitFor();
    await screenshot(page, 'icloud-mail-address');
    expect(await credentialsOf(mailId)).toEqual({ appleId: 'person@example.com', appPassword: PASSWORD, mailAddress: 'person@icloud.com' });
    await expect(page.locator(`article[data-connection="${mailId}"]`).getByText('active').count()).resolves.toBeGreaterThan(0);
    await closeScreen(opened);
  });
});
