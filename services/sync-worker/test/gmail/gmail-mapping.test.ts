import { describe, expect, it } from 'vitest';
import { addressList, GmailMessageSchema, messageRecord } from '../../src/connectors/gmail/gmail-mapping.ts';

const message = (labelIds: string[], headers: Record<string, string> = {}) =>
  GmailMessageSchema.parse({
    id: '18c0000000001',
    threadId: '18c0000000000',
    labelIds,
    internalDate: '1764072000123',
    sizeEstimate: 4321,
    payload: { headers: Object.entries(headers).map(([name, value]) => ({ name, value })) },
  });

describe('Gmail address headers', () => {
  it('keeps a quoted name with a comma as one person, and writes people as "Name <address>"', () => {
    expect(addressList('"Lovelace, Ada" <ada@example.com>, bob@example.org')).toEqual(['Lovelace, Ada <ada@example.com>', 'bob@example.org']);
  });

  it('gives the members of a group and nothing for an empty one', () => {
    expect(addressList('Team: a@example.com, "B" <b@example.com>;')).toEqual(['a@example.com', 'B <b@example.com>']);
    expect(addressList('undisclosed-recipients:;')).toEqual([]);
  });

  it('decodes encoded words in names, and keeps a header it cannot parse as it came', () => {
    expect(addressList('=?UTF-8?B?w4lsw6hu?= <elen@example.com>')).toEqual(['Élèn <elen@example.com>']);
    expect(addressList('not <<an> address')).toEqual(['not <<an> address']);
  });
});

describe('a Gmail envelope as mail.message', () => {
  it('reads unread, starred and the folder from the labels, the time from internalDate (milliseconds as a string)', () => {
    const record = messageRecord(message(['INBOX', 'UNREAD', 'STARRED', 'Label_7'], { From: 'Ada <ada@example.com>', Subject: '=?UTF-8?Q?Caf=C3=A9?=' }), 'me@example.com', new Map([['Label_7', 'Receipts']]));
    expect(record).toMatchObject({ source_id: '18c0000000001', thread_id: '18c0000000000', account: 'me@example.com', folder: 'INBOX', is_read: false, is_starred: true, labels: ['INBOX', 'UNREAD', 'STARRED', 'Receipts'], from: 'Ada <ada@example.com>', to: [], cc: [], subject: 'Café', size_bytes: 4321, has_attachments: null });
    expect(record.received_at).toBe('2025-11-25T12:00:00.123Z');
  });

  it('places a message by the first of TRASH, SPAM, DRAFT, INBOX, SENT, else ARCHIVE', () => {
    const folder = (labels: string[]) => messageRecord(message(labels), 'me@example.com', new Map()).folder;
    expect(folder(['SENT', 'INBOX'])).toBe('INBOX');
    expect(folder(['SENT'])).toBe('SENT');
    expect(folder(['INBOX', 'TRASH'])).toBe('TRASH');
    expect(folder(['CATEGORY_UPDATES'])).toBe('ARCHIVE');
    expect(messageRecord(message([]), 'me@example.com', new Map())).toMatchObject({ is_read: true, is_starred: false });
  });
});
