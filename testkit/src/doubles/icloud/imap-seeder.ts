import { ImapFlow } from 'imapflow';

export type ImapSeedMessage = { from: string; to: string; subject: string; date: Date; attachment?: boolean };

/** An RFC 5322 message, with one attachment part when asked, so BODYSTRUCTURE has something to report. */
export function rawMessage(message: ImapSeedMessage): string {
  const head = [`From: ${message.from}`, `To: ${message.to}`, `Subject: ${message.subject}`, `Date: ${message.date.toUTCString()}`, `Message-ID: <${message.subject.replace(/\W+/g, '-')}-${message.date.getTime()}@test>`, 'MIME-Version: 1.0'];
  if (!message.attachment) return [...head, 'Content-Type: text/plain; charset=utf-8', '', 'The body, which the gateway never reads.', ''].join('\r\n');
  return [
    ...head,
    'Content-Type: multipart/mixed; boundary="b1"',
    '',
    '--b1',
    'Content-Type: text/plain; charset=utf-8',
    '',
    'See the attachment.',
    '--b1',
    'Content-Type: application/pdf; name="invoice.pdf"',
    'Content-Disposition: attachment; filename="invoice.pdf"',
    'Content-Transfer-Encoding: base64',
    '',
    'JVBERi0xLjQK',
    '--b1--',
    '',
  ].join('\r\n');
}

/**
 * Writes test mail into a local Dovecot as its owner would from another client (APPEND, STORE, EXPUNGE,
 * CREATE, DELETE). It dials 127.0.0.1 itself with the test CA and the real name; it is not the pin's traffic.
 */
export async function createImapSeeder(options: { port: number; ca: string; servername: string; user: string; password: string }) {
  const imap = new ImapFlow({
    host: '127.0.0.1',
    port: options.port,
    secure: true,
    servername: options.servername,
    tls: { ca: options.ca, servername: options.servername },
    auth: { user: options.user, pass: options.password },
    logger: false,
    disableAutoIdle: true,
  });
  imap.on('error', () => undefined);
  await imap.connect();

  async function inMailbox<T>(mailbox: string, work: () => Promise<T>): Promise<T> {
    const lock = await imap.getMailboxLock(mailbox);
    try {
      return await work();
    } finally {
      lock.release();
    }
  }

  return {
    /** Appends a message; returns its UID. */
    async append(mailbox: string, message: ImapSeedMessage, flags: string[] = []): Promise<number> {
      const appended = await imap.append(mailbox, rawMessage(message), flags, message.date);
      if (!appended || appended.uid === undefined) throw new Error(`APPEND to ${mailbox} gave no UID`);
      return appended.uid;
    },
    addFlags: (mailbox: string, uid: number, flags: string[]) => inMailbox(mailbox, () => imap.messageFlagsAdd(String(uid), flags, { uid: true })),
    removeFlags: (mailbox: string, uid: number, flags: string[]) => inMailbox(mailbox, () => imap.messageFlagsRemove(String(uid), flags, { uid: true })),
    /** Deletes and expunges one message. */
    expunge: (mailbox: string, uid: number) => inMailbox(mailbox, () => imap.messageDelete(String(uid), { uid: true })),
    async create(mailbox: string): Promise<void> {
      await imap.mailboxCreate(mailbox);
    },
    async remove(mailbox: string): Promise<void> {
      await imap.mailboxDelete(mailbox);
    },
    async uidValidity(mailbox: string): Promise<bigint> {
      const status = await imap.status(mailbox, { uidValidity: true });
      if (status === false || status.uidValidity === undefined) throw new Error(`no UIDVALIDITY for ${mailbox}`);
      return status.uidValidity;
    },
    async close(): Promise<void> {
      await imap.logout().catch(() => imap.close());
    },
  };
}
export type ImapSeeder = Awaited<ReturnType<typeof createImapSeeder>>;
