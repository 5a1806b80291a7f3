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
    field('from_address', 'string', 'The sender\'s address alone, lower-cased (from without the name).', { generated: true }),
    field('from_name', 'string', 'The sender\'s display name alone, when from has one.', { generated: true }),
    field('is_starred', 'boolean', 'Whether it is starred or flagged (Gmail: the STARRED label); null where the source does not say.'),
  ],
  notes: [
    'Envelopes only: bodies, snippets and attachments are never cached, and no read here returns them.',
    'from, to and cc hold "Name <address>" strings; from_address and from_name hold the sender\'s two parts: group or filter senders by from_address.',
    'received_at is UTC.',
    'Gmail: folder is INBOX, SENT, DRAFT, SPAM, TRASH or ARCHIVE (in none of those), read from its labels; labels holds the label names (system ones as INBOX, UNREAD, STARRED, IMPORTANT, CATEGORY_*).',
  ],
  fieldDocs: {
    from: 'Match an address with contains, not eq: the display name is part of the value. Use from_address to group by sender.',
    from_address: 'Lower-cased; eq matches one sender whatever name they used.',
    labels: "contains matches one whole label. From IMAP sources (iCloud) labels are the message's flags: 'flagged', 'answered', 'draft', and keywords such as '$Forwarded' as written.",
    to: 'contains matches one whole recipient string.',
  },
  defaultOrder: [{ field: 'received_at', direction: 'desc' }],
};
