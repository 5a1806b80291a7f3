import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { loadConfig } from '@pcg/shared/config';
import { sql } from '@pcg/shared/db';
import { blockingConnection, openSyncProducer, type SyncJobResult } from '@pcg/shared/queues';
import { bullmqPrefix } from '@pcg/shared/redis';
import {
  createDavSeeder,
  createImapSeeder,
  createLoopbackFetch,
  createTestCertificates,
  startDovecot,
  startRadicale,
  type LocalServer,
  type TestCertificates,
} from '@pcg/testkit/doubles';
import { createCapturingLogger, useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { syncWorkerConfigSchema } from '../../src/config.ts';
import { ICloudResolveSchema } from '../../src/connectors/icloud/icloud-local-override.ts';
import { ICLOUD_IMAP_HOST } from '../../src/connectors/icloud/icloud-imap-pin.ts';
import { startSyncWorker, type RunningSyncWorker } from '../../src/service.ts';
import { connectionState, workerEnv } from '../helpers.ts';
import { ACCOUNT, icloudCertificates, insertICloudSignIn } from './icloud-setup.ts';

describe('ICLOUD_RESOLVE (the demo\'s local iCloud servers)', () => {
  it('takes *.icloud.com names and imap.mail.me.com, each to a loopback address and port', () => {
    const parsed = ICloudResolveSchema.parse('caldav.icloud.com=127.0.0.1:18125, Contacts.iCloud.com=127.0.0.1:18125,imap.mail.me.com=[::1]:18126');
    expect([...parsed]).toEqual([
      ['caldav.icloud.com', { address: '127.0.0.1', port: 18125 }],
      ['contacts.icloud.com', { address: '127.0.0.1', port: 18125 }],
      [ICLOUD_IMAP_HOST, { address: '::1', port: 18126 }],
    ]);
    expect(ICloudResolveSchema.parse(undefined).size).toBe(0);
  });

  it.each([
    ['evil.test=127.0.0.1:443', 'neither a *.icloud.com name'],
    ['icloud.com.evil.test=127.0.0.1:443', 'neither a *.icloud.com name'],
    ['imap.mail.me.com.evil.test=127.0.0.1:993', 'neither a *.icloud.com name'],
    ['caldav.icloud.com=10.0.0.5:443', 'not a loopback address'],
    ['caldav.icloud.com=localhost:443', 'not a loopback address'],
    ['caldav.icloud.com=127.0.0.1', 'is not name=address:port'],
    ['caldav.icloud.com=127.0.0.1:70000', 'out of range'],
  ])('refuses %s at start', (value, reason) => {
    expect(() => loadConfig(syncWorkerConfigSchema, { ...workerEnv(), ICLOUD_RESOLVE: value })).toThrow(reason);
  });
});

const testEnv = useTestEnvironment();

describe('a sync-worker configured with ICLOUD_RESOLVE and ICLOUD_EXTRA_CA_FILE', { tags: ['needs-radicale', 'needs-dovecot'] }, () => {
  let certs: TestCertificates;
  let radicale: LocalServer;
  let dovecot: LocalServer;
  let worker: RunningSyncWorker;
  let caFile: string;
  let queue: Queue;
  let producer: Awaited<ReturnType<typeof openSyncProducer>>;

  async function syncNow(id: string): Promise<SyncJobResult | undefined> {
    const jobId = await producer.requestSync(id);
    const state = await waitFor(async () => {
      const now = await queue.getJobState(jobId);
      return now === 'completed' || now === 'failed' ? now : undefined;
    }, 30_000, 'the sync to finish');
    return state === 'completed' ? ((await queue.getJob(jobId))?.returnvalue as SyncJobResult) : undefined;
  }

  beforeAll(async () => {
    certs = icloudCertificates();
    radicale = await startRadicale(certs, { name: ACCOUNT.appleId, password: ACCOUNT.appPassword });
    dovecot = await startDovecot(certs, { name: ACCOUNT.appleId, password: ACCOUNT.appPassword });
    caFile = join(certs.dir, 'extra-ca.pem');
    writeFileSync(caFile, certs.ca);
    const transport = createLoopbackFetch(certs.ca);
    const dav = createDavSeeder({ base: `https://caldav.icloud.com:${radicale.port}/`, fetch: transport.fetch, user: ACCOUNT.appleId, password: ACCOUNT.appPassword });
    await dav.calendar(`/${ACCOUNT.appleId}/home/`, 'Home');
    const year = new Date().getUTCFullYear();
    // Tomorrow: inside the calendar sync window whatever its settings (CALENDAR_FUTURE_DAYS is at least 1).
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10).replaceAll('-', '');
    await dav.putEvent(`/${ACCOUNT.appleId}/home/lunch.ics`, ['BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//t//EN', 'BEGIN:VEVENT', 'UID:lunch', 'SUMMARY:Lunch', `DTSTAMP:${year}0101T000000Z`, `DTSTART:${tomorrow}T120000Z`, `DTEND:${tomorrow}T130000Z`, 'END:VEVENT', 'END:VCALENDAR', ''].join('\r\n'));
    await transport.close();
    const mail = await createImapSeeder({ port: dovecot.port, ca: certs.ca, servername: ICLOUD_IMAP_HOST, user: ACCOUNT.appleId, password: ACCOUNT.appPassword });
    await mail.append('INBOX', { from: 'ann@example.com', to: ACCOUNT.appleId, subject: 'Hello from Dovecot', date: new Date('2026-03-02T08:00:00Z') });
    await mail.close();

    const resolve = `caldav.icloud.com=127.0.0.1:${radicale.port},contacts.icloud.com=127.0.0.1:${radicale.port},${ICLOUD_IMAP_HOST}=127.0.0.1:${dovecot.port}`;
    const env = testEnv.env(workerEnv({ SOURCE_TIMEOUT_MS: '15000', ICLOUD_RESOLVE: resolve, ICLOUD_EXTRA_CA_FILE: caFile }));
    // The default connectors, as `npm start` runs them: nothing injected.
    worker = await startSyncWorker(loadConfig(syncWorkerConfigSchema, env), createCapturingLogger('sync-worker').log);
    const settings = { REDIS_URL: testEnv.redisUrl, REDIS_PREFIX: testEnv.redisPrefix };
    producer = await openSyncProducer(settings, createCapturingLogger().log);
    queue = new Queue('sync', { connection: blockingConnection(settings, 'override'), prefix: bullmqPrefix(settings) });
  });
  afterAll(async () => {
    await worker?.close();
    await producer?.close();
    await queue?.close();
    await radicale?.stop();
    await dovecot?.stop();
    certs?.dispose();
  });

  it('syncs calendar and mail from the local servers through the guard and the pin, TLS verified with the extra CA', async () => {
    const ids = await insertICloudSignIn(testEnv.db);
    expect(await syncNow(ids.calendar)).toMatchObject({ outcome: 'synced', mode: 'full' });
    expect(await syncNow(ids.mail)).toMatchObject({ outcome: 'synced', mode: 'full' });
    expect(await testEnv.db.anyFirst(sql.unsafe`SELECT title FROM calendar_events WHERE connection_id = ${ids.calendar}::uuid`)).toEqual(['Lunch']);
    expect(await testEnv.db.anyFirst(sql.unsafe`SELECT subject FROM mail_messages WHERE connection_id = ${ids.mail}::uuid`)).toEqual(['Hello from Dovecot']);
  });

  it('still verifies TLS: with another CA in the file, neither server is trusted and nothing is read', async () => {
    const other = createTestCertificates(['unrelated.test']);
    writeFileSync(caFile, other.ca);
    try {
      const ids = await insertICloudSignIn(testEnv.db);
      expect(await syncNow(ids.calendar)).toBeUndefined();
      expect(await syncNow(ids.mail)).toBeUndefined();
      expect((await connectionState(testEnv.db, ids.calendar)).last_error).toBe('iCloud could not be reached');
      expect((await connectionState(testEnv.db, ids.mail)).last_error).toMatch(/certificate/i);
      expect(await testEnv.db.oneFirst(sql.unsafe`SELECT count(*)::int FROM calendar_events WHERE connection_id = ${ids.calendar}::uuid`)).toBe(0);
      expect(await testEnv.db.oneFirst(sql.unsafe`SELECT count(*)::int FROM mail_messages WHERE connection_id = ${ids.mail}::uuid`)).toBe(0);
    } finally {
      writeFileSync(caFile, certs.ca);
      other.dispose();
    }
  });
});
