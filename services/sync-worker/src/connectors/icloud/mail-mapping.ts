import { z } from 'zod';
import { SourceUnavailableError } from '../kit/source-errors.ts';

/** What each message is fetched with: the envelope and its metadata, never a body part (bodies are never cached). */
export const ENVELOPE_QUERY = { uid: true, envelope: true, internalDate: true, flags: true, size: true, bodyStructure: true } as const;

const AddressSchema = z.object({ name: z.string().nullish(), address: z.string().nullish() });
type Address = z.infer<typeof AddressSchema>;
const Addresses = z.array(AddressSchema).nullish();
const DateLike = z.union([z.date(), z.string()]).nullish();

type Part = { type?: string | undefined; disposition?: string | undefined; childNodes?: Part[] | undefined };
const PartSchema: z.ZodType<Part> = z.lazy(() =>
  z.object({ type: z.string().optional(), disposition: z.string().optional(), childNodes: z.array(PartSchema).optional() }),
);

export const FetchedMessageSchema = z.object({
  uid: z.number().int().positive(),
  flags: z.set(z.string()).optional(),
  size: z.number().int().nonnegative().optional(),
  internalDate: DateLike,
  envelope: z
    .object({ date: DateLike, subject: z.string().nullish(), messageId: z.string().nullish(), from: Addresses, to: Addresses, cc: Addresses })
    .optional(),
  bodyStructure: PartSchema.optional(),
});
export type FetchedMessage = z.infer<typeof FetchedMessageSchema>;

/** The message's place: mailbox, its UIDVALIDITY and the UID. A new UIDVALIDITY gives new ids, so old rows never linger as duplicates. */
export function messageSourceId(mailbox: string, uidValidity: string, uid: number): string {
  return `${mailbox}:${uidValidity}:${uid}`;
}

/** The UID a source id of this mailbox and UIDVALIDITY names, or undefined when it names another. */
export function uidOf(sourceId: string, mailbox: string, uidValidity: string): number | undefined {
  const prefix = `${mailbox}:${uidValidity}:`;
  if (!sourceId.startsWith(prefix)) return undefined;
  const rest = sourceId.slice(prefix.length);
  return /^\d+$/.test(rest) ? Number(rest) : undefined;
}

/** "Name <address>", the catalogue's form for people (the same as the Graph mail connector writes). */
function person(value: Address): string | null {
  const address = value.address?.trim();
  const name = value.name?.trim();
  if (!address) return name || null;
  return name && name !== address ? `${name} <${address}>` : address;
}
const people = (list: Address[] | null | undefined) => (list ?? []).map(person).filter((value): value is string => value !== null);

/**
 * IMAP flags as labels: system flags by their name in lower case without the backslash (`flagged`,
 * `answered`, `draft`), keywords as the server writes them (`$Forwarded`, `$MailFlagBit0`). `\Seen` is
 * `is_read` and `\Recent` is per-session noise, so neither is a label.
 */
export function flagLabels(flags: ReadonlySet<string>): string[] {
  return [...flags]
    .filter((flag) => !/^\\(seen|recent)$/i.test(flag))
    .map((flag) => (flag.startsWith('\\') ? flag.slice(1).toLowerCase() : flag))
    .sort();
}

/** Whether any part is an attachment: an explicit `attachment` disposition, read from BODYSTRUCTURE (no body is fetched). */
function hasAttachment(part: Part | undefined): boolean {
  if (part === undefined) return false;
  if (part.disposition?.toLowerCase() === 'attachment') return true;
  return (part.childNodes ?? []).some(hasAttachment);
}

function instant(value: Date | string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  const date = value instanceof Date ? value : new Date(value);
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}

/** One fetched envelope → `mail.message`. `received_at` is INTERNALDATE (when the server took the message in), not the sender's Date header. */
export function imapMessageRecord(raw: unknown, where: { account: string; mailbox: string; uidValidity: string }): Record<string, unknown> & { source_id: string } {
  const parsed = FetchedMessageSchema.safeParse(raw);
  if (!parsed.success) throw new SourceUnavailableError(`iCloud Mail sent a message in an unexpected shape (${parsed.error.issues[0]?.path.join('.') ?? '?'})`);
  const message = parsed.data;
  const envelope = message.envelope;
  const flags = message.flags ?? new Set<string>();
  return {
    source_id: messageSourceId(where.mailbox, where.uidValidity, message.uid),
    account: where.account,
    folder: where.mailbox,
    labels: flagLabels(flags),
    // IMAP names no conversation without THREAD or OBJECTID, which iCloud does not offer.
    thread_id: null,
    from: envelope?.from?.[0] ? person(envelope.from[0]) : null,
    to: people(envelope?.to),
    cc: people(envelope?.cc),
    subject: envelope?.subject ?? null,
    received_at: instant(message.internalDate) ?? instant(envelope?.date),
    is_read: [...flags].some((flag) => flag.toLowerCase() === '\\seen'),
    has_attachments: message.bodyStructure === undefined ? null : hasAttachment(message.bodyStructure),
    size_bytes: message.size ?? null,
  };
}
