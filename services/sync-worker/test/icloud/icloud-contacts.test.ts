import { z } from 'zod';
import { sql } from '@pcg/shared/db';
import { createDavSeeder, startRadicale, type LocalServer, type TestCertificates } from '@pcg/testkit/doubles';
import { useTestEnvironment } from '@pcg/testkit/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionState } from '../helpers.ts';
import { ACCOUNT, icloudCertificates, insertICloudSignIn, setCursor, startICloudRig, type ICloudRig } from './icloud-setup.ts';

const testEnv = useTestEnvironment();
let certs: TestCertificates;
let radicale: LocalServer;
let rig: ICloudRig;
let seed: ReturnType<typeof createDavSeeder>;

const BOOK = `/${ACCOUNT.appleId}/contacts/`;
const APPLE_3 = [
  'BEGIN:VCARD', 'VERSION:3.0', 'PRODID:-//Apple Inc.//iOS 17.4//EN', 'N:Doe;Jane;;;', 'FN:Jane Doe', 'ORG:Acme;',
  'item1.EMAIL;type=INTERNET;type=pref:jane@example.com', 'item1.X-ABLabel:Custom', 'EMAIL;type=INTERNET;type=HOME:jane@home.example',
  'TEL;type=CELL;type=VOICE;type=pref:+41 79 123 45 67', 'TEL;type=WORK;type=VOICE:+41 44 000 00 00', 'BDAY:1604-03-15', 'UID:jane-3', 'END:VCARD', '',
].join('\r\n');
const VCARD_4 = [
  'BEGIN:VCARD', 'VERSION:4.0', 'FN:John Roe', 'N:Roe;John;;;', 'EMAIL;TYPE=work:john@example.org',
  'TEL;VALUE=uri;TYPE="voice,home":tel:+1-555-555-5555', 'BDAY:--0412', 'REV:20240102T030405Z', 'UID:urn:uuid:john-4', 'END:VCARD', '',
].join('\r\n');
const GROUP = ['BEGIN:VCARD', 'VERSION:3.0', 'FN:Friends', 'N:Friends;;;;', 'X-ADDRESSBOOKSERVER-KIND:group', 'UID:group-1', 'END:VCARD', ''].join('\r\n');
const card = (uid: string, name: string, email: string) => ['BEGIN:VCARD', 'VERSION:3.0', `FN:${name}`, `N:${name};;;;`, `EMAIL:${email}`, `UID:${uid}`, 'END:VCARD', ''].join('\r\n');

const ContactRow = z.object({ source_id: z.string(), display_name: z.string().nullable(), emails: z.unknown(), phones: z.unknown(), birthday: z.string().nullable(), updated_at: z.string().nullable() });
function contacts(connectionId: string) {
  return testEnv.db.any(sql.type(ContactRow)`
    SELECT source_id, display_name, emails, phones, birthday::text AS birthday, updated_at::text AS updated_at
    FROM contacts_entries WHERE connection_id = ${connectionId}::uuid ORDER BY source_id`);
}

describe('iCloud contacts over CardDAV against Radicale', { tags: ['needs-radicale'] }, () => {
  beforeAll(async () => {
    certs = icloudCertificates();
    radicale = await startRadicale(certs, { name: ACCOUNT.appleId, password: ACCOUNT.appPassword });
    rig = await startICloudRig(testEnv, certs, { carddavUrl: `https://contacts.icloud.com:${radicale.port}/` });
    seed = createDavSeeder({ base: `https://contacts.icloud.com:${radicale.port}/`, fetch: rig.transport.fetch, user: ACCOUNT.appleId, password: ACCOUNT.appPassword });
    await seed.addressBook(BOOK, 'Contacts');
  });
  afterAll(async () => {
    await rig?.close();
    await radicale?.stop();
    certs?.dispose();
  });

  it('reads a vCard 3.0 and a 4.0 with their phones and emails, leaves group cards out, then follows changes and deletions by sync token', async () => {
    await seed.putVCard(`${BOOK}jane.vcf`, APPLE_3);
    await seed.putVCard(`${BOOK}john.vcf`, VCARD_4);
    await seed.putVCard(`${BOOK}friends.vcf`, GROUP);
    const { contacts: id } = await insertICloudSignIn(testEnv.db);

    const first = await rig.syncNow(id);
    expect(first.result).toMatchObject({ outcome: 'synced', mode: 'full', written: 2 });
    expect(await contacts(id)).toEqual([
      {
        source_id: `/${ACCOUNT.appleId}/contacts/jane.vcf`,
        display_name: 'Jane Doe',
        emails: [{ type: null, value: 'jane@example.com' }, { type: 'home', value: 'jane@home.example' }],
        phones: [{ type: 'cell', value: '+41 79 123 45 67' }, { type: 'work', value: '+41 44 000 00 00' }],
        birthday: '1604-03-15',
        updated_at: null,
      },
      {
        source_id: `/${ACCOUNT.appleId}/contacts/john.vcf`,
        display_name: 'John Roe',
        emails: [{ type: 'work', value: 'john@example.org' }],
        phones: [{ type: 'home', value: '+1-555-555-5555' }],
        birthday: '1604-04-12',
        updated_at: '2024-01-02 03:04:05+00',
      },
    ]);

    await seed.putVCard(`${BOOK}ann.vcf`, card('ann', 'Ann Lee', 'ann@example.net'));
    await seed.putVCard(`${BOOK}john.vcf`, card('urn:uuid:john-4', 'John Roe', 'john@new.example'));
    const second = await rig.syncNow(id);
    expect(second.result).toMatchObject({ outcome: 'synced', mode: 'incremental', written: 2 });
    const afterChange = await contacts(id);
    expect(afterChange.map((row) => row.display_name)).toEqual(['Ann Lee', 'Jane Doe', 'John Roe']);
    expect(afterChange.find((row) => row.display_name === 'John Roe')?.emails).toEqual([{ type: null, value: 'john@new.example' }]);

    await seed.remove(`${BOOK}jane.vcf`);
    const third = await rig.syncNow(id);
    expect(third.result).toMatchObject({ outcome: 'synced', mode: 'incremental', written: 0 });
    expect((await contacts(id)).map((row) => row.display_name)).toEqual(['Ann Lee', 'John Roe']);
  });

  it('a sync token the server no longer knows gives one full resync with no duplicate and nothing stale', async () => {
    const { contacts: id } = await insertICloudSignIn(testEnv.db);
    await rig.syncNow(id);
    const before = await contacts(id);
    expect(before.length).toBeGreaterThan(0);
    const { sync_cursor: cursor } = await connectionState(testEnv.db, id);
    const stale = structuredClone(cursor) as { collections: Record<string, { token: string | null }> };
    for (const state of Object.values(stale.collections)) state.token = 'http://radicale.org/ns/sync/0000000000000000000000000000000000000000000000000000000000000000';
    await setCursor(testEnv.db, id, stale);
    await seed.remove(`${BOOK}ann.vcf`);

    const { job, result } = await rig.syncNow(id);
    expect(job.attemptsMade).toBe(1);
    expect(result).toMatchObject({ outcome: 'synced', mode: 'full' });
    const after = await contacts(id);
    expect(after.map((row) => row.display_name)).toEqual(['John Roe']);
    expect(new Set(after.map((row) => row.source_id)).size).toBe(after.length);
    expect(await connectionState(testEnv.db, id)).toMatchObject({ status: 'active', last_error: null });
  });
});
