import emailAddresses from 'email-addresses';
import libmime from 'libmime';
import { z } from 'zod';

/** The headers asked for with `format=metadata`: the envelope, nothing of the body. */
export const METADATA_HEADERS = ['From', 'To', 'Cc', 'Subject', 'Date'] as const;

export const GmailMessageSchema = z.looseObject({
  id: z.string().min(1),
  threadId: z.string().optional(),
  labelIds: z.array(z.string()).default([]),
  historyId: z.string().optional(),
  /** Epoch milliseconds as a string (reference §0). */
  internalDate: z.string().regex(/^\d+$/).optional(),
  sizeEstimate: z.number().int().nonnegative().optional(),
  payload: z.looseObject({ headers: z.array(z.looseObject({ name: z.string(), value: z.string() })).default([]) }).optional(),
});
export type GmailMessage = z.infer<typeof GmailMessageSchema>;

/** Labels that place a message, in the order that decides when it carries several (mail sent to oneself is in INBOX). */
const FOLDER_LABELS = ['TRASH', 'SPAM', 'DRAFT', 'INBOX', 'SENT'] as const;
/** Messages a full listing leaves out (Gmail's default without `includeSpamTrash`); a change that puts one there removes it. */
export const HIDDEN_LABELS = new Set(['SPAM', 'TRASH']);

/** "Name <address>" as the catalogue writes people; the address alone when there is no name. */
function person(name: string | null, address: string): string {
  const decoded = name ? libmime.decodeWords(name).trim() : '';
  return decoded && decoded !== address ? `${decoded} <${address}>` : address;
}

/**
 * The mailboxes of an address-list header (RFC 5322, through `email-addresses`): quoted names with
 * commas, groups (their members; an empty group such as `undisclosed-recipients:;` gives none) and
 * encoded words in names. A header the parser refuses is kept as it came, so nothing is silently lost.
 */
export function addressList(value: string | undefined): string[] {
  if (!value?.trim()) return [];
  const parsed = emailAddresses.parseAddressList({ input: value, rfc6532: true });
  if (!parsed) return [libmime.decodeWords(value).trim()];
  return parsed.flatMap((entry) => (entry.type === 'group' ? entry.addresses : [entry]).map((mailbox) => person(mailbox.name, mailbox.address)));
}

/** Label ids as the person sees them: user labels by name (from `labels.list`), system labels by id. */
export type LabelNames = ReadonlyMap<string, string>;

/** `mail.message` of one envelope: flags and folder from the labels, the time from `internalDate` (not the Date header). */
export function messageRecord(message: GmailMessage, account: string, labelNames: LabelNames) {
  const header = (name: string) => message.payload?.headers.find((candidate) => candidate.name.toLowerCase() === name.toLowerCase())?.value;
  const labels = message.labelIds;
  return {
    source_id: message.id,
    account,
    folder: FOLDER_LABELS.find((label) => labels.includes(label)) ?? 'ARCHIVE',
    labels: labels.map((id) => labelNames.get(id) ?? id),
    thread_id: message.threadId ?? null,
    from: addressList(header('From'))[0] ?? null,
    to: addressList(header('To')),
    cc: addressList(header('Cc')),
    subject: header('Subject') !== undefined ? libmime.decodeWords(header('Subject') ?? '') : null,
    received_at: message.internalDate ? new Date(Number(message.internalDate)).toISOString() : null,
    is_read: !labels.includes('UNREAD'),
    is_starred: labels.includes('STARRED'),
    // The metadata format carries no MIME parts, so attachments cannot be told.
    has_attachments: null,
    size_bytes: message.sizeEstimate ?? null,
  };
}
