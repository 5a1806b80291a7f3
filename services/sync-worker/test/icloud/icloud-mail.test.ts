import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { sql } from '@pcg/shared/db';
import { createImapSeeder, loopbackDialer, startICloudImap, type ICloudImapServer, type ImapSeeder, type TestCertificates } from '@pcg/testkit/doubles';
import { useTestEnvironment, waitFor } from '@pcg/testkit/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ICLOUD_IMAP_HOST } from '../../src/connectors/icloud/icloud-imap-pin.ts';
import { connectionState } from '../helpers.ts';
import { ACCOUNT, icloudCertificates, insertICloudSignIn, replaceICloudCredentials, startICloudRig, type ICloudRig } from './icloud-setup.ts';

const testEnv = useTestEnvironment();
let certs: TestCertificates;
let dovecot: ICloudImapServer;
let rig: ICloudRig;
let seed: ImapSeeder;
let dialer: ReturnType<typeof loopbackDialer>;

const MessageRow = z.object({
  id: z.string(), source_id: z.string(), account: z.string().nullable(), folder: z.string().nullable(), labels: z.array(z.string()),
  thread_id: z.string().nullable(), from: z.string().nullable(), from_address: z.string().nullable(), from_name: z.string().nullable(),
  to: z.array(z.string()), cc: z.array(z.string()), subject: z.string().nullable(), received_at: z.string().nullable(),
  is_read: z.boolean().nullable(), has_attachments: z.boolean().nullable(), size_bytes: z.number().nullable(), synced_at: z.string(),
});
type MessageRow = z.infer<typeof MessageRow>;

async function messages(connectionId: string): Promise<MessageRow[]> {
  const rows = await testEnv.db.any(sql.type(MessageRow)`
    SELECT id, source_id, account, folder, labels, thread_id, "from", from_address, from_name, "to", cc, subject,
           to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS received_at, is_read, has_attachments, size_bytes,
           to_char(synced_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') AS synced_at
    FROM mail_messages WHERE connection_id = ${connectionId}::uuid ORDER BY folder, subject`);
  return [...rows];
}
const bySubject = (rows: readonly MessageRow[], subject: string) => rows.filter((row) => row.subject === subject);

const WHEN = new Date('2026-03-02T08:15:30Z');
const ANN = 'Ann Example <ann@example.com>';

async function syncedMail(): Promise<string> {
  const { mail } = await insertICloudSignIn(testEnv.db);
  expect((await rig.syncNow(mail)).result).toMatchObject({ outcome: 'synced', mode: 'full' });
  return mail;
}

describe('iCloud mail over IMAP against Dovecot', { tags: ['needs-dovecot'] }, () => {
  beforeAll(async () => {
    certs = icloudCertificates();
    // Only the iCloud Mail address logs in, and ENABLE is answered without an untagged ENABLED, as iCloud does.
    dovecot = await startICloudImap(certs, { name: ACCOUNT.appleId, password: ACCOUNT.appPassword });
    dialer = loopbackDialer(dovecot.port);
    rig = await startICloudRig(testEnv, certs, { imap: { dial: dialer.dial, ca: certs.ca } });
    seed = await createImapSeeder({ port: dovecot.dovecotPort, ca: certs.ca, servername: ICLOUD_IMAP_HOST, user: ACCOUNT.appleId, password: ACCOUNT.appPassword });
    for (const mailbox of ['Sent Messages', 'Archive', 'Drafts', 'Junk']) await seed.create(mailbox);
    await seed.append('INBOX', { from: ANN, to: 'Person <person@icloud.com>, bob@example.com', subject: 'Invoice March', date: WHEN, attachment: true });
    await seed.append('INBOX', { from: 'news@example.com', to: 'person@icloud.com', subject: 'Weekly news', date: WHEN }, ['\\Seen', '\\Flagged', '$Forwarded']);
    await seed.append('Sent Messages', { from: 'Person <person@icloud.com>', to: ANN, subject: 'Re: Invoice March', date: WHEN }, ['\\Seen']);
    await seed.append('Archive', { from: ANN, to: 'person@icloud.com', subject: 'Old trip', date: WHEN }, ['\\Seen']);
    await seed.append('Drafts', { from: 'person@icloud.com', to: ANN, subject: 'Unsent draft', date: WHEN }, ['\\Draft']);
    await seed.append('Junk', { from: 'spam@example.com', to: 'person@icloud.com', subject: 'You won', date: WHEN });
  });
  afterAll(async () => {
    await seed?.close();
    await rig?.close();
    await dovecot?.stop();
    certs?.dispose();
  });

  it('a full sync reads the envelopes of INBOX, Sent and Archive (not Drafts or Junk) through the pin', async () => {
    const id = await syncedMail();
    const rows = await messages(id);
    expect(rows.map((row) => [row.folder, row.subject])).toEqual(
      expect.arrayContaining([['Archive', 'Old trip'], ['INBOX', 'Invoice March'], ['INBOX', 'Weekly news'], ['Sent Messages', 'Re: Invoice March']]),
    );
    expect(rows.filter((row) => row.subject === 'Unsent draft' || row.subject === 'You won')).toEqual([]);
    const [invoice] = bySubject(rows, 'Invoice March');
    expect(invoice).toMatchObject({
      account: ACCOUNT.appleId, folder: 'INBOX', labels: [], thread_id: null,
      from: ANN, from_address: 'ann@example.com', from_name: 'Ann Example',
      to: ['Person <person@icloud.com>', 'bob@example.com'], cc: [],
      received_at: '2026-03-02T08:15:30Z', is_read: false, has_attachments: true,
    });
    expect(invoice?.size_bytes).toBeGreaterThan(100);
    expect(invoice?.source_id).toMatch(/^INBOX:\d+:\d+$/);
    expect(bySubject(rows, 'Weekly news')[0]).toMatchObject({ is_read: true, labels: ['$Forwarded', 'flagged'], from: 'news@example.com', has_attachments: false });
    expect(new Set(dialer.dialed.map((dial) => `${dial.host}:${dial.port}`))).toEqual(new Set([`${ICLOUD_IMAP_HOST}:993`]));
  });

  it('opens credentials sealed before the iCloud Mail address existed (an Apple ID and app-specific password only)', async () => {
    const { mail } = await insertICloudSignIn(testEnv.db, { appleId: ACCOUNT.appleId, appPassword: ACCOUNT.appPassword });
    expect((await rig.syncNow(mail)).result).toMatchObject({ outcome: 'synced', mode: 'full' });
    expect(bySubject(await messages(mail), 'Invoice March')).toEqual([expect.objectContaining({ account: ACCOUNT.appleId })]);
  });

  it('an Apple ID at another domain is refused under both names; the connection needs sign-in and says to enter the iCloud Mail address, which then logs in', async () => {
    const appleId = 'person@example.com';
    const { mail } = await insertICloudSignIn(testEnv.db, { appleId, appPassword: ACCOUNT.appPassword });
    const { job } = await rig.syncNow(mail);
    expect(await job.getState()).toBe('failed');
    const refused = await connectionState(testEnv.db, mail);
    expect(refused.status).toBe('needs_sign_in');
    expect(refused.last_error).toContain('enter your iCloud Mail address');
    expect(await messages(mail)).toEqual([]);

    await replaceICloudCredentials(testEnv.db, mail, { appleId, appPassword: ACCOUNT.appPassword, mailAddress: ACCOUNT.appleId });
    expect((await rig.syncNow(mail)).result).toMatchObject({ outcome: 'synced', mode: 'full' });
    expect(await connectionState(testEnv.db, mail)).toMatchObject({ status: 'active', last_error: null });
    expect(bySubject(await messages(mail), 'Invoice March')).toEqual([expect.objectContaining({ account: ACCOUNT.appleId, folder: 'INBOX' })]);
  });

  it('never fetches a body: Dovecot counts no body part read in any session of a full sync', async () => {
    const logFile = join(dovecot.dir, 'log');
    const from = readFileSync(logFile, 'utf8').length;
    await syncedMail();
    const logouts = await waitFor(() => {
      const lines = readFileSync(logFile, 'utf8').slice(from).split('\n').filter((line) => line.includes('Logged out'));
      return lines.length > 0 ? lines : undefined;
    }, 5_000, 'Dovecot to log the session out');
    for (const line of logouts) expect(line).toMatch(/body_count=0 body_bytes=0/);
  });

  it('an incremental sync adds a new message by UID and leaves the rows it did not read untouched', async () => {
    const id = await syncedMail();
    const before = await messages(id);
    await seed.append('INBOX', { from: ANN, to: 'person@icloud.com', subject: 'Lunch tomorrow?', date: new Date('2026-03-03T12:00:00Z') });
    expect((await rig.syncNow(id)).result).toMatchObject({ outcome: 'synced', mode: 'incremental' });
    const after = await messages(id);
    expect(bySubject(after, 'Lunch tomorrow?')).toEqual([expect.objectContaining({ folder: 'INBOX', is_read: false, received_at: '2026-03-03T12:00:00Z' })]);
    // Nothing else changed at the server, so nothing else was written again (synced_at moves on every write).
    expect(after.filter((row) => row.subject !== 'Lunch tomorrow?')).toEqual(before);
  });

  it('a flag change is read through CONDSTORE (CHANGEDSINCE): only the changed message is written again', async () => {
    const id = await syncedMail();
    const uid = await seed.append('INBOX', { from: ANN, to: 'person@icloud.com', subject: 'Please flag me', date: WHEN });
    expect((await rig.syncNow(id)).result).toMatchObject({ mode: 'incremental' });
    const before = await messages(id);
    expect(bySubject(before, 'Please flag me')[0]).toMatchObject({ is_read: false, labels: [] });

    await seed.addFlags('INBOX', uid, ['\\Seen', '\\Flagged']);
    expect((await rig.syncNow(id)).result).toMatchObject({ outcome: 'synced', mode: 'incremental' });
    const after = await messages(id);
    const flagged = bySubject(after, 'Please flag me')[0];
    expect(flagged).toMatchObject({ is_read: true, labels: ['flagged'], id: bySubject(before, 'Please flag me')[0]?.id });
    expect(after.filter((row) => row.subject !== 'Please flag me')).toEqual(before.filter((row) => row.subject !== 'Please flag me'));
    const { sync_cursor: cursor } = await connectionState(testEnv.db, id);
    expect((cursor as { mailboxes: Record<string, { highestModseq: string | null }> }).mailboxes.INBOX?.highestModseq).toMatch(/^\d+$/);

    await seed.removeFlags('INBOX', uid, ['\\Flagged']);
    await rig.syncNow(id);
    expect(bySubject(await messages(id), 'Please flag me')[0]).toMatchObject({ is_read: true, labels: [] });
  });

  it('an expunged message is removed by comparing the UID set', async () => {
    const id = await syncedMail();
    const uid = await seed.append('Archive', { from: ANN, to: 'person@icloud.com', subject: 'Delete me', date: WHEN });
    await rig.syncNow(id);
    const before = await messages(id);
    expect(bySubject(before, 'Delete me')).toHaveLength(1);
    await seed.expunge('Archive', uid);
    expect((await rig.syncNow(id)).result).toMatchObject({ outcome: 'synced', mode: 'incremental' });
    expect(await messages(id)).toEqual(before.filter((row) => row.subject !== 'Delete me'));
  });

  it('a new UIDVALIDITY (the mailbox deleted and made again) gives one full resync with no duplicate row', async () => {
    const id = await syncedMail();
    const validity = await seed.uidValidity('Archive');
    const archived = bySubject(await messages(id), 'Old trip');
    expect(archived).toHaveLength(1);

    await seed.remove('Archive');
    await seed.create('Archive');
    await seed.append('Archive', { from: ANN, to: 'person@icloud.com', subject: 'Old trip', date: WHEN }, ['\\Seen']);
    expect(await seed.uidValidity('Archive')).not.toBe(validity);

    const { job, result } = await rig.syncNow(id);
    expect(job.attemptsMade).toBe(1);
    expect(result).toMatchObject({ outcome: 'synced', mode: 'full' });
    const rows = await messages(id);
    expect(rows.filter((row) => row.folder === 'Archive').map((row) => row.subject)).toEqual(['Old trip']);
    expect(bySubject(rows, 'Old trip')[0]?.source_id).toBe(`Archive:${await seed.uidValidity('Archive')}:1`);
    expect(rows.filter((row) => row.subject === 'Invoice March')).toHaveLength(1);
  });
});
