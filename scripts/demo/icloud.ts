import { copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import {
  createDavSeeder,
  createImapSeeder,
  createLoopbackFetch,
  createTestCertificates,
  dovecotMissing,
  radicaleMissing,
  startDovecot,
  startRadicale,
  type LocalServer,
} from '@pcg/testkit/doubles';
import type { consoleClient } from './demo-console.ts';

export const ICLOUD_DEMO_NAME = 'Demo iCloud';
const ACCOUNT = { appleId: 'demo@icloud.com', appPassword: 'demo-demo-demo-demo' };
const IMAP_HOST = 'imap.mail.me.com';

type Options = {
  api: ReturnType<typeof consoleClient>;
  /** Where the demo's CA is written, for the operator to look at (the sign-in holds its own copy). */
  dataDir: string;
  radicalePort: number;
  dovecotPort: number;
  say: (line: string) => void;
};

/** Where the demo's iCloud names go: its Radicale (CalDAV, CardDAV) and its Dovecot (IMAP), on loopback. */
function resolveMap(options: Options): string {
  const radicale = `127.0.0.1:${options.radicalePort}`;
  return `caldav.icloud.com=${radicale},contacts.icloud.com=${radicale},${IMAP_HOST}=127.0.0.1:${options.dovecotPort}`;
}

const ics = (uid: string, ...lines: string[]) =>
  ['BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//pcg demo//EN', 'BEGIN:VEVENT', `UID:${uid}`, 'DTSTAMP:20260101T000000Z', ...lines, 'END:VEVENT', 'END:VCALENDAR', ''].join('\r\n');
const vcard = (uid: string, name: string, email: string, phone: string) =>
  ['BEGIN:VCARD', 'VERSION:3.0', `UID:${uid}`, `FN:${name}`, `N:${name.split(' ').reverse().join(';')};;;`, `EMAIL;TYPE=INTERNET:${email}`, `TEL;TYPE=CELL:${phone}`, 'END:VCARD', ''].join('\r\n');

async function seed(ca: string, radicale: LocalServer, dovecot: LocalServer): Promise<void> {
  const transport = createLoopbackFetch(ca);
  try {
    const dav = createDavSeeder({ base: `https://caldav.icloud.com:${radicale.port}/`, fetch: transport.fetch, user: ACCOUNT.appleId, password: ACCOUNT.appPassword });
    const home = `/${ACCOUNT.appleId}/home/`;
    const book = `/${ACCOUNT.appleId}/contacts/`;
    const year = new Date().getUTCFullYear();
    await dav.calendar(home, 'Home');
    await dav.putEvent(`${home}standup.ics`, ics('standup', 'SUMMARY:Standup', `DTSTART:${year}0105T083000Z`, `DTEND:${year}0105T084500Z`, 'RRULE:FREQ=WEEKLY;BYDAY=MO,WE,FR'));
    // A day off three weeks ahead: inside the calendar window (CALENDAR_PAST_DAYS, CALENDAR_FUTURE_DAYS) whenever the demo runs.
    const dayAhead = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10).replaceAll('-', '');
    await dav.putEvent(`${home}holiday.ics`, ics('holiday', 'SUMMARY:Holiday', `DTSTART;VALUE=DATE:${dayAhead(21)}`, `DTEND;VALUE=DATE:${dayAhead(22)}`));
    await dav.addressBook(book, 'Contacts');
    await dav.putVCard(`${book}ann.vcf`, vcard('ann', 'Ann Example', 'ann@example.com', '+41 79 000 00 01'));
    await dav.putVCard(`${book}bob.vcf`, vcard('bob', 'Bob Example', 'bob@example.com', '+41 79 000 00 02'));
  } finally {
    await transport.close();
  }
  const mail = await createImapSeeder({ port: dovecot.port, ca, servername: IMAP_HOST, user: ACCOUNT.appleId, password: ACCOUNT.appPassword });
  try {
    const day = (days: number) => new Date(Date.now() - days * 86_400_000);
    await mail.create('Sent Messages');
    await mail.create('Archive');
    await mail.append('INBOX', { from: 'Ann Example <ann@example.com>', to: ACCOUNT.appleId, subject: 'Invoice for March', date: day(1), attachment: true });
    await mail.append('INBOX', { from: 'Bob Example <bob@example.com>', to: ACCOUNT.appleId, subject: 'Lunch on Friday?', date: day(0) }, ['\\Flagged']);
    await mail.append('Sent Messages', { from: ACCOUNT.appleId, to: 'Ann Example <ann@example.com>', subject: 'Re: Invoice for March', date: day(0) }, ['\\Seen']);
    await mail.append('Archive', { from: 'Travel <trips@example.com>', to: ACCOUNT.appleId, subject: 'Your trip last year', date: day(300) }, ['\\Seen']);
  } finally {
    await mail.close();
  }
}

async function firstSyncs(options: Options, ids: readonly string[], since: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const rows = (await options.api.list()).filter((row) => ids.includes(row.id));
    const done = rows.filter((row) => row.lastError !== null || (row.lastSyncedAt !== null && Date.parse(row.lastSyncedAt) >= since - 1_000));
    if (done.length === ids.length || Date.now() > deadline) {
      for (const row of rows) {
        options.say(row.lastError ? `iCloud ${row.sector ?? ''} sync reports: ${row.lastError}` : `iCloud ${row.sector ?? ''} synced from the local ${row.sector === 'mail' ? 'Dovecot' : 'Radicale'}`);
      }
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/**
 * The demo iCloud account: a local Radicale (CalDAV, CardDAV) and Dovecot (IMAP) with TLS from a demo CA,
 * seeded, and connected through the Console with an Apple ID and app-specific password of the demo's own, as
 * a demo connection (issue 42) whose sign-in maps the iCloud names onto these servers and trusts this CA for
 * them alone; the guard, the IMAP pin and TLS verification stay on, and the gateway needs no setting.
 * Each run makes a new CA, so each run connects anew; the caller removes the earlier run's connections.
 */
export async function connectDemoICloud(options: Options): Promise<{ connectionIds: string[]; close(): Promise<void> } | undefined> {
  const missing = radicaleMissing() ?? dovecotMissing();
  if (missing !== undefined) {
    options.say(`iCloud demo skipped: ${missing} (Debian: apt-get install radicale dovecot-imapd)`);
    return undefined;
  }
  const certs = createTestCertificates(['*.icloud.com', IMAP_HOST]);
  const servers: LocalServer[] = [];
  const close = async () => {
    for (const server of servers) await server.stop();
    certs.dispose();
  };
  try {
    mkdirSync(options.dataDir, { recursive: true });
    copyFileSync(path.join(certs.dir, 'ca.pem'), path.join(options.dataDir, 'demo-icloud-ca.pem'));
    const radicale = await startRadicale(certs, { name: ACCOUNT.appleId, password: ACCOUNT.appPassword }, { port: options.radicalePort });
    servers.push(radicale);
    const dovecot = await startDovecot(certs, { name: ACCOUNT.appleId, password: ACCOUNT.appPassword }, { port: options.dovecotPort });
    servers.push(dovecot);
    await seed(certs.ca, radicale, dovecot);
    options.say(`demo iCloud servers: Radicale on 127.0.0.1:${radicale.port} (caldav/contacts.icloud.com), Dovecot on 127.0.0.1:${dovecot.port} (${IMAP_HOST}), TLS from a demo CA`);
  } catch (error) {
    await close();
    options.say(`iCloud demo skipped: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`);
    return undefined;
  }

  const since = Date.now();
  const demo = { ICLOUD_RESOLVE: resolveMap(options), ICLOUD_CA_PEM: certs.ca };
  let ids: string[];
  try {
    const created = await options.api.create({ provider: 'icloud', displayName: ICLOUD_DEMO_NAME, credentials: ACCOUNT, syncIntervalMinutes: 1, demo });
    ids = (created.connections ?? [created.connection]).map((row) => row.id);
  } catch (error) {
    await close();
    options.say(`iCloud demo refused: ${error instanceof Error ? error.message : String(error)}`);
    return undefined;
  }
  options.say(`signed in "${ICLOUD_DEMO_NAME}" (${ACCOUNT.appleId}, an app-specific password): ${ids.length} connections`);
  await firstSyncs(options, ids, since);
  return { connectionIds: ids, close };
}
