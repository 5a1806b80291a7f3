import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@pcg/shared/config';
import { startDovecot, startRadicale, type LocalServer, type TestCertificates } from '@pcg/testkit/doubles';
import { createCapturingLogger, useTestEnvironment } from '@pcg/testkit/testing';
import { consoleConfigSchema } from '../../services/console/src/config.ts';
import { startConsole, type RunningConsole } from '../../services/console/src/service.ts';
import { syncWorkerConfigSchema } from '../../services/sync-worker/src/config.ts';
import { ICLOUD_IMAP_HOST } from '../../services/sync-worker/src/connectors/icloud/icloud-imap-pin.ts';
import { startSyncWorker, type RunningSyncWorker } from '../../services/sync-worker/src/service.ts';
import { workerEnv } from '../../services/sync-worker/test/helpers.ts';
import { ACCOUNT, icloudCertificates, insertICloudSignIn } from '../../services/sync-worker/test/icloud/icloud-setup.ts';

// The connection check (issue 32) of the Apple-style provider against the real servers Debian has
// (Radicale for CalDAV and CardDAV, Dovecot for IMAP), reached as the demo reaches them: ICLOUD_RESOLVE
// sends the iCloud names to them, through the iCloud guard and the IMAP pin, TLS verified with the test CA.
const testEnv = useTestEnvironment();

type Check = { ok: boolean; steps: Array<{ step: string; passed: boolean; message: string }>; requests: number };

describe('the connection check of the Apple-style provider', { tags: ['needs-radicale', 'needs-dovecot'] }, () => {
  let certs: TestCertificates;
  let radicale: LocalServer;
  let dovecot: LocalServer;
  let worker: RunningSyncWorker;
  let consoleService: RunningConsole;

  async function check(id: string): Promise<Check> {
    const response = await fetch(`${consoleService.address}/api/connections/${id}/check`, { method: 'POST' });
    expect(response.status).toBe(200);
    return (await response.json()) as Check;
  }

  beforeAll(async () => {
    certs = icloudCertificates();
    radicale = await startRadicale(certs, { name: ACCOUNT.appleId, password: ACCOUNT.appPassword });
    dovecot = await startDovecot(certs, { name: ACCOUNT.appleId, password: ACCOUNT.appPassword });
    const caFile = join(certs.dir, 'extra-ca.pem');
    writeFileSync(caFile, certs.ca);
    const resolve = `caldav.icloud.com=127.0.0.1:${radicale.port},contacts.icloud.com=127.0.0.1:${radicale.port},${ICLOUD_IMAP_HOST}=127.0.0.1:${dovecot.port}`;
    const env = testEnv.env(workerEnv({ SOURCE_TIMEOUT_MS: '15000', ICLOUD_RESOLVE: resolve, ICLOUD_EXTRA_CA_FILE: caFile, REST_PORT: '0' }));
    worker = await startSyncWorker(loadConfig(syncWorkerConfigSchema, env), createCapturingLogger('sync-worker').log);
    consoleService = await startConsole(loadConfig(consoleConfigSchema, env), createCapturingLogger('console').log, { audit: { record: () => undefined } });
  });
  afterAll(async () => {
    await consoleService?.close();
    await worker?.close();
    await radicale?.stop();
    await dovecot?.stop();
    certs?.dispose();
  });

  it('reads the signed-in principal on CalDAV and CardDAV and logs in to IMAP, each once', async () => {
    const ids = await insertICloudSignIn(testEnv.db);
    for (const sector of ['calendar', 'contacts', 'mail'] as const) {
      const result = await check(ids[sector]);
      expect(result.ok, JSON.stringify(result)).toBe(true);
      expect(result.steps.find((step) => step.step === `endpoint:${sector}`)?.passed).toBe(true);
      expect(result.requests).toBeGreaterThanOrEqual(1);
      expect(result.requests).toBeLessThanOrEqual(10);
    }
  });

  it('fails each read with the fix when the servers refuse the app-specific password', async () => {
    const ids = await insertICloudSignIn(testEnv.db, { appleId: ACCOUNT.appleId, appPassword: 'wxyz-wxyz-wxyz-wxyz' });
    const calendar = await check(ids.calendar);
    expect(calendar.ok).toBe(false);
    expect(calendar.steps.find((step) => step.step === 'endpoint:calendar')).toMatchObject({ passed: false, message: expect.stringContaining('app-specific password') });
    const mail = await check(ids.mail);
    expect(mail.steps.find((step) => step.step === 'endpoint:mail')).toMatchObject({ passed: false, message: expect.stringContaining('app-specific password') });
  });
});
