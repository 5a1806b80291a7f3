import type { FetchOptions, ImapFlow, ListResponse } from 'imapflow';
import { z } from 'zod';
import type { ConnectorContext, SyncOutcome } from '../connector-types.ts';
import { SourceError, SourceUnavailableError } from '../kit/source-errors.ts';
import { ENVELOPE_QUERY, imapMessageRecord, uidOf } from './mail-mapping.ts';

export const MAIL_OBJECT = 'mail.message';
const UPSERT_BATCH = 500;

/** The mailboxes read (docs/decisions.md): the inbox and the special-use Sent and Archive, not Drafts, Junk or Trash. */
const READ_SPECIAL_USE = new Set(['\\Inbox', '\\Sent', '\\Archive']);

const MailboxStateSchema = z.object({
  uidValidity: z.string().regex(/^\d+$/),
  /** HIGHESTMODSEQ when the server offers CONDSTORE; null when it does not (every known message is read again). */
  highestModseq: z.string().regex(/^\d+$/).nullable(),
  uidNext: z.number().int().positive(),
});
type MailboxState = z.infer<typeof MailboxStateSchema>;
export const MailCursorSchema = z.object({ mailboxes: z.record(z.string(), MailboxStateSchema) });
type MailCursor = z.infer<typeof MailCursorSchema>;

export function chooseMailboxes(listed: readonly ListResponse[]): string[] {
  return listed
    .filter((entry) => !entry.flags.has('\\Noselect') && !entry.flags.has('\\NonExistent'))
    .filter((entry) => entry.path.toUpperCase() === 'INBOX' || (entry.specialUse !== undefined && READ_SPECIAL_USE.has(entry.specialUse)))
    .map((entry) => entry.path);
}

/** Source ids of a mailbox under any UIDVALIDITY: `<mailbox>:<uidvalidity>:<uid>`. */
const inMailbox = (mailbox: string) => (sourceId: string) =>
  sourceId.startsWith(`${mailbox}:`) && /^\d+:\d+$/.test(sourceId.slice(mailbox.length + 1));

type MailboxRead = { state: MailboxState; whole: boolean };

/**
 * One mailbox, opened read-only. Same UIDVALIDITY as stored: messages with UIDs from the stored UIDNEXT
 * are new; older ones are read again only when CONDSTORE says they changed (CHANGEDSINCE), or all of them
 * when the server has no CONDSTORE. A new UIDVALIDITY (or no stored state) reads everything and drops the
 * rows of the old one. Expunged messages are found by comparing the UIDs the server lists with the rows.
 */
async function syncMailbox(context: ConnectorContext, imap: ImapFlow, path: string, stored: MailboxState | undefined, cached: readonly string[], account: string): Promise<MailboxRead> {
  const lock = await imap.getMailboxLock(path, { readOnly: true });
  try {
    const box = imap.mailbox;
    if (box === false) throw new SourceUnavailableError(`iCloud Mail did not open the mailbox ${path}`);
    const uidValidity = box.uidValidity.toString();
    const modseq = box.highestModseq;
    const same = stored !== undefined && stored.uidValidity === uidValidity;
    const where = { account, mailbox: path, uidValidity };

    const pending: Array<Record<string, unknown>> = [];
    const flush = async (all = false) => {
      if (pending.length === 0 || (!all && pending.length < UPSERT_BATCH)) return;
      await context.cache.upsert(MAIL_OBJECT, pending.splice(0));
    };
    const read = async (range: string, options: FetchOptions, fromUid = 1) => {
      for await (const message of imap.fetch(range, ENVELOPE_QUERY, options)) {
        if (message.uid < fromUid) continue; // `n:*` names the last message when no UID is n or above
        pending.push(imapMessageRecord(message, where));
        await flush();
      }
    };

    if (box.exists > 0) {
      if (!same) await read('1:*', { uid: true });
      else {
        if (box.uidNext > stored.uidNext) await read(`${stored.uidNext}:*`, { uid: true }, stored.uidNext);
        const known = stored.uidNext > 1 ? `1:${stored.uidNext - 1}` : undefined;
        const condstore = stored.highestModseq !== null && modseq !== undefined;
        if (known !== undefined && !condstore) await read(known, { uid: true });
        else if (known !== undefined && condstore && modseq > BigInt(stored.highestModseq ?? '0')) {
          await read(known, { uid: true, changedSince: BigInt(stored.highestModseq ?? '0') });
        }
      }
    }
    await flush(true);

    const listed = box.exists > 0 ? await imap.search({ all: true }, { uid: true }) : [];
    if (listed === false) throw new SourceUnavailableError(`iCloud Mail did not list the messages of ${path}`);
    const present = new Set(listed);
    const gone = cached.filter(inMailbox(path)).filter((id) => {
      const uid = uidOf(id, path, uidValidity);
      return uid === undefined || !present.has(uid);
    });
    if (gone.length > 0) await context.cache.remove(MAIL_OBJECT, gone);
    return { state: { uidValidity, highestModseq: modseq?.toString() ?? null, uidNext: box.uidNext }, whole: !same };
  } finally {
    lock.release();
  }
}

/**
 * A dropped connection or a command iCloud answered NO/BAD is the source being unavailable (retried);
 * anything else (a shutdown, the gateway's own failure) keeps its identity.
 */
function asSourceError(error: unknown, imap: ImapFlow, signal: AbortSignal): unknown {
  if (error instanceof SourceError || signal.aborted || !(error instanceof Error)) return error;
  const answered = typeof (error as { responseStatus?: unknown }).responseStatus === 'string';
  if (!answered && imap.usable) return error;
  return new SourceUnavailableError(`iCloud Mail failed: ${error.message}`);
}

/** iCloud Mail over IMAP: envelopes of the inbox, Sent and Archive, never a body. */
export async function syncMail(context: ConnectorContext, openSession: () => Promise<ImapFlow>, account: string): Promise<SyncOutcome> {
  const parsed = MailCursorSchema.safeParse(context.cursor);
  const cursor: MailCursor | null = parsed.success ? parsed.data : null;
  const imap = await openSession();
  try {
    const mailboxes = chooseMailboxes(await imap.list());
    const cached = await context.cache.sourceIds(MAIL_OBJECT);
    const next: MailCursor = { mailboxes: {} };
    let whole = cursor === null;
    for (const path of mailboxes) {
      const read = await syncMailbox(context, imap, path, cursor?.mailboxes[path], cached, account);
      whole ||= read.whole;
      next.mailboxes[path] = read.state;
    }
    const left = cached.filter((id) => !mailboxes.some((path) => inMailbox(path)(id)));
    if (left.length > 0) await context.cache.remove(MAIL_OBJECT, left);
    return { mode: whole ? 'full' : 'incremental', cursor: next };
  } catch (error) {
    throw asSourceError(error, imap, context.signal);
  } finally {
    await imap.logout().catch(() => imap.close());
  }
}
