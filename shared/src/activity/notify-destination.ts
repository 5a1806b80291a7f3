import { z } from 'zod';
import { openCredentials, sealCredentials } from '../crypto/index.ts';
import { OPERATOR_USER_ID, sql, type DatabasePool } from '../db/index.ts';

/** The two kinds of destination, told apart by the URL. */
export type NotifyDestination =
  /** ntfy: POST JSON {topic, title, message, priority, tags} to the server's root; the URL's one path segment is the topic. */
  | { kind: 'ntfy'; url: string; root: string; topic: string }
  /** The Apprise API: POST JSON {title, body, type} to the URL itself, `…/notify/<key>`. */
  | { kind: 'apprise'; url: string };

const SEAL_CONTEXT = 'alert-destination';
const APPRISE_PATH = /^(.*\/)?notify\/[^/]+\/?$/;
const NTFY_TOPIC = /^\/([-_A-Za-z0-9]{1,64})\/?$/;

export class DestinationRefusedError extends Error {}

/**
 * Reads the kind from the URL: a path ending in `/notify/<key>` is the Apprise API; one path segment of
 * letters, digits, `-` and `_` is an ntfy topic. Anything else is refused, as is a URL with a user or a
 * fragment. The outbound policy judges the address itself.
 */
export function parseDestination(text: string): NotifyDestination {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new DestinationRefusedError('the destination must be a full http or https address');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new DestinationRefusedError('the destination must be an http or https address');
  if (url.username || url.password || url.hash) throw new DestinationRefusedError('the destination may not carry a user name, password or fragment');
  if (APPRISE_PATH.test(url.pathname)) return { kind: 'apprise', url: url.toString() };
  const topic = NTFY_TOPIC.exec(url.pathname)?.[1];
  if (topic && !url.search) return { kind: 'ntfy', url: url.toString(), root: `${url.origin}/`, topic };
  throw new DestinationRefusedError('the destination must be an ntfy topic (https://host/<topic>) or an Apprise API address (https://host/notify/<key>)');
}

const StoredSchema = z.object({ kind: z.enum(['ntfy', 'apprise']), url_sealed: z.instanceof(Buffer), saved_at: z.string() });

export function createDestinationStore(db: DatabasePool, credentialsKey: Buffer) {
  return {
    async save(destination: NotifyDestination): Promise<void> {
      const sealed = sealCredentials(credentialsKey, destination.url, SEAL_CONTEXT);
      await db.query(sql.unsafe`
        INSERT INTO alert_destination (user_id, kind, url_sealed, saved_at) VALUES (${OPERATOR_USER_ID}, ${destination.kind}, ${sql.binary(sealed)}, now())
        ON CONFLICT (user_id) DO UPDATE SET kind = EXCLUDED.kind, url_sealed = EXCLUDED.url_sealed, saved_at = EXCLUDED.saved_at`);
    },
    async remove(): Promise<void> {
      await db.query(sql.unsafe`DELETE FROM alert_destination WHERE user_id = ${OPERATOR_USER_ID}`);
    },
    /** What the Console may show: whether one is set, its kind and when; never the URL. */
    async describe(): Promise<{ set: boolean; kind: 'ntfy' | 'apprise' | null; savedAt: string | null }> {
      const row = await db.maybeOne(sql.type(StoredSchema)`SELECT kind, url_sealed, saved_at FROM alert_destination WHERE user_id = ${OPERATOR_USER_ID}`);
      return row ? { set: true, kind: row.kind, savedAt: row.saved_at } : { set: false, kind: null, savedAt: null };
    },
    /** The destination with its URL opened, and when it was saved; null when none is set. */
    async open(): Promise<{ destination: NotifyDestination; savedAt: string } | null> {
      const row = await db.maybeOne(sql.type(StoredSchema)`SELECT kind, url_sealed, saved_at FROM alert_destination WHERE user_id = ${OPERATOR_USER_ID}`);
      if (!row) return null;
      return { destination: parseDestination(String(openCredentials(credentialsKey, row.url_sealed, SEAL_CONTEXT))), savedAt: row.saved_at };
    },
  };
}

export type DestinationStore = ReturnType<typeof createDestinationStore>;
