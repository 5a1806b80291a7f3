import { commonFields, field, type ObjectDef } from '../catalogue-types.ts';

export const mailMessage: ObjectDef = {
  name: 'mail.message',
  sector: 'mail',
  table: 'mail_messages',
  description: 'A mail message envelope: sender, recipients, subject, folder and flags. Never the body.',
  fields: [
    ...commonFields(),
    field('account', 'string', 'The mailbox address the message belongs to.', { categorical: true }),
    field('folder', 'string', 'Folder or mailbox, e.g. INBOX, Sent.', { categorical: true }),
    field('labels', 'string[]', 'Labels or categories; filter with contains.', { sortable: false }),
    field('thread_id', 'string', 'Conversation the message belongs to.'),
    field('from', 'string', 'Sender as "Name <address>".'),
    field('to', 'string[]', 'Recipients as "Name <address>".', { sortable: false }),
    field('cc', 'string[]', 'Copied recipients.', { sortable: false }),
    field('subject', 'string', 'Subject line.'),
    field('received_at', 'timestamp', 'When the message arrived (UTC).'),
    field('is_read', 'boolean', 'Whether it has been read.'),
    field('has_attachments', 'boolean', 'Whether it carries attachments (which are never cached).'),
    field('size_bytes', 'integer', 'Size of the whole message at the source.', { unit: 'bytes' }),
  ],
  notes: [
    'Envelopes only: bodies, snippets and attachments are never cached. fetch_live may return one body; it is not stored.',
    'from, to and cc hold "Name <address>" strings; use contains with an address to match.',
    'received_at is UTC.',
  ],
  fieldDocs: {
    from: 'Match an address with contains, not eq: the display name is part of the value.',
    labels: 'contains matches one whole label.',
    to: 'contains matches one whole recipient string.',
  },
  defaultOrder: [{ field: 'received_at', direction: 'desc' }],
};
