import { z } from 'zod';
import type { ConnectorContext, SyncOutcome } from '../connector-types.ts';
import { OAuthCredentialsSchema } from '../../sign-ins/oauth-client.ts';
import { SourceUnavailableError } from '../kit/source-errors.ts';
import { deltaApplier } from './delta-applier.ts';
import { graphClient, type GraphClient } from './graph-client.ts';
import { MESSAGE_SELECT, messageRecord } from './graph-mapping.ts';

const OBJECT = 'mail.message';
/** Ids that survive a move between folders, so a moved message stays one row. */
const PREFER = ['IdType="ImmutableId"'];

const CursorSchema = z.object({
  account: z.string().nullable(),
  folders: z.record(z.string(), z.object({ name: z.string(), deltaLink: z.url() })),
});
type Cursor = z.infer<typeof CursorSchema>;

const FolderSchema = z.object({ '@odata.type': z.string().optional(), id: z.string().min(1), displayName: z.string(), childFolderCount: z.number().nullish() });
/** Outlook's folder tree is shallow; a deeper walk is a loop on one side. */
const MAX_DEPTH = 32;
/** The derived type of a search folder (mailSearchFolder resource): a view over other folders, holding no mail of its own. */
const SEARCH_FOLDER = '#microsoft.graph.mailSearchFolder';

function readShape<T>(schema: z.ZodType<T>, raw: unknown, what: string): T {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new SourceUnavailableError(`Microsoft Graph answered ${what} in an unexpected shape`);
  return parsed.data;
}

/**
 * Every mail folder that holds mail: the top-level folders (`GET /me/mailFolders`) and, below each one
 * that has children, its `childFolders`, depth first. Search folders are skipped: the messages they show
 * live in other folders, which are read themselves. Hidden folders are left out (the default of both
 * lists without `includeHiddenFolders=true`): they hold what Outlook does not show the person.
 */
async function mailFolders(graph: GraphClient): Promise<Array<z.infer<typeof FolderSchema>>> {
  const found: Array<z.infer<typeof FolderSchema>> = [];
  const walk = async (path: string, depth: number): Promise<void> => {
    if (depth > MAX_DEPTH) throw new SourceUnavailableError('Microsoft Graph answered a mail folder tree deeper than any mailbox holds');
    for (const folder of readShape(z.array(FolderSchema), await graph.list(path), 'the folder list')) {
      if (folder['@odata.type']?.toLowerCase() === SEARCH_FOLDER.toLowerCase()) continue;
      found.push(folder);
      if ((folder.childFolderCount ?? 1) > 0) await walk(`/me/mailFolders/${encodeURIComponent(folder.id)}/childFolders?$top=100`, depth + 1);
    }
  };
  await walk('/me/mailFolders?$top=100', 0);
  return found;
}

/** The mailbox's name: the one the sign-in read from the ID token, else the one an older cursor kept. */
function mailboxName(context: ConnectorContext, cursor: Cursor | undefined): string | null {
  const parsed = OAuthCredentialsSchema.safeParse(context.credentials);
  return (parsed.success ? parsed.data.accountName : undefined) ?? cursor?.account ?? null;
}

/**
 * Message envelopes through the message delta of every mail folder (child folders included), with
 * `$select` of the envelope fields only (bodies and attachments are never fetched). Each folder keeps
 * its own deltaLink; a folder seen for the first time gets an initial round. A message moved between
 * folders is one row (immutable ids), named by the folder it is in now.
 */
export async function syncMail(context: ConnectorContext, apiBase: string): Promise<SyncOutcome> {
  const graph = graphClient(context, apiBase);
  const previous = CursorSchema.safeParse(context.cursor);
  const cursor: Cursor | undefined = previous.success ? previous.data : undefined;
  const account = mailboxName(context, cursor);
  const folders = await mailFolders(graph);
  const next: Cursor = { account, folders: {} };
  let incremental = cursor !== undefined;
  const applier = deltaApplier(context, OBJECT);
  for (const folder of folders) {
    const stored = cursor?.folders[folder.id];
    if (!stored) incremental = false;
    const first = stored?.deltaLink ?? `/me/mailFolders/${encodeURIComponent(folder.id)}/messages/delta?$select=${MESSAGE_SELECT.join(',')}`;
    const deltaLink = await graph.deltaRound(first, PREFER, applier.pages((item) => messageRecord(item, { account, folder: folder.displayName })));
    next.folders[folder.id] = { name: folder.displayName, deltaLink };
  }
  await applier.finish();
  return { mode: incremental ? 'incremental' : 'full', cursor: next };
}
