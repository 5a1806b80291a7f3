import { z } from 'zod';
import type { ConnectorContext, SyncOutcome } from '../connector-types.ts';
import { deltaApplier } from './delta-applier.ts';
import { graphClient } from './graph-client.ts';
import { contactRecord } from './graph-mapping.ts';

const OBJECT = 'contacts.contact';
const CursorSchema = z.object({ deltaLink: z.url() });

/**
 * Contacts through the contacts delta of the default folder (`/me/contacts/delta`: reference §6.2 notes
 * it is undocumented but answered; the documented per-folder form does not reach the default folder).
 */
export async function syncContacts(context: ConnectorContext, apiBase: string): Promise<SyncOutcome> {
  const graph = graphClient(context, apiBase);
  const cursor = CursorSchema.safeParse(context.cursor);
  const applier = deltaApplier(context, OBJECT);
  const deltaLink = await graph.deltaRound(cursor.success ? cursor.data.deltaLink : '/me/contacts/delta', [], applier.pages(contactRecord));
  await applier.finish();
  return { mode: cursor.success ? 'incremental' : 'full', cursor: { deltaLink } };
}
