import { z } from 'zod';
import type { ConnectorContext, SyncOutcome } from '../connector-types.ts';
import { SourceCursorExpiredError, SourceUnavailableError } from '../kit/source-errors.ts';
import { deltaApplier } from './delta-applier.ts';
import { graphClient, type GraphClient } from './graph-client.ts';
import { contactRecord } from './graph-mapping.ts';

const OBJECT = 'contacts.contact';
/** Outlook's contact folders nest shallowly; a deeper walk is a loop on one side. */
const MAX_DEPTH = 16;

const CursorSchema = z.object({
  /** The default Contacts folder, once a contact in it named it. */
  defaultFolder: z.string().nullable(),
  folders: z.record(z.string(), z.object({ deltaLink: z.url() })),
});
type Cursor = z.infer<typeof CursorSchema>;

const FolderListSchema = z.array(z.object({ id: z.string().min(1) }));
const DefaultProbeSchema = z.object({ value: z.array(z.object({ parentFolderId: z.string().min(1).nullish() })) });

function readShape<T>(schema: z.ZodType<T>, raw: unknown, what: string): T {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new SourceUnavailableError(`Microsoft Graph answered ${what} in an unexpected shape`);
  return parsed.data;
}

/**
 * Every contact folder: the default one, named by the `parentFolderId` of a contact `GET /me/contacts`
 * lists ("from the default contacts folder of the signed-in user", user-list-contacts), since
 * `GET /me/contactFolders` lists only "the contact folders in the default Contacts folder"; those, and
 * their `childFolders`, depth first.
 */
async function contactFolders(graph: GraphClient, known: string | null): Promise<{ defaultFolder: string | null; ids: string[] }> {
  const probe = readShape(DefaultProbeSchema, await graph.get('/me/contacts?$top=1&$select=parentFolderId'), 'the contact list');
  const defaultFolder = probe.value[0]?.parentFolderId ?? known;
  const ids = defaultFolder ? [defaultFolder] : [];
  const walk = async (path: string, depth: number): Promise<void> => {
    if (depth > MAX_DEPTH) throw new SourceUnavailableError('Microsoft Graph answered a contact folder tree deeper than any mailbox holds');
    for (const folder of readShape(FolderListSchema, await graph.list(path), 'the contact folder list')) {
      if (ids.includes(folder.id)) continue;
      ids.push(folder.id);
      await walk(`/me/contactFolders/${encodeURIComponent(folder.id)}/childFolders?$top=100`, depth + 1);
    }
  };
  await walk('/me/contactFolders?$top=100', 0);
  return { defaultFolder, ids };
}

/**
 * Contacts through the documented per-folder delta (`/me/contactFolders/{id}/contacts/delta`, contact:
 * delta) of every contact folder, each folder with its own deltaLink. A cursor of the older single
 * `/me/contacts/delta` round is treated as expired: the sync runner's full resync then lists every
 * folder and drops what none lists. Contact ids do not change with the folder read, so no row moves.
 */
export async function syncContacts(context: ConnectorContext, apiBase: string): Promise<SyncOutcome> {
  const graph = graphClient(context, apiBase);
  const parsed = CursorSchema.safeParse(context.cursor);
  if (context.cursor !== null && !parsed.success) throw new SourceCursorExpiredError('the contacts cursor predates reading each contact folder');
  const cursor: Cursor | undefined = parsed.success ? parsed.data : undefined;
  const { defaultFolder, ids } = await contactFolders(graph, cursor?.defaultFolder ?? null);
  const applier = deltaApplier(context, OBJECT);
  const next: Cursor = { defaultFolder, folders: {} };
  let incremental = cursor !== undefined;
  for (const id of ids) {
    const stored = cursor?.folders[id];
    if (!stored) incremental = false;
    const deltaLink = await graph.deltaRound(stored?.deltaLink ?? `/me/contactFolders/${encodeURIComponent(id)}/contacts/delta`, [], applier.pages(contactRecord));
    next.folders[id] = { deltaLink };
  }
  await applier.finish();
  return { mode: incremental ? 'incremental' : 'full', cursor: next };
}
