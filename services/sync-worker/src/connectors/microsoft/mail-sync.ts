import { z } from 'zod';
import type { ConnectorContext, SyncOutcome } from '../connector-types.ts';
import { odataNextLink, walkPages } from '../kit/paging.ts';
import { SourceUnavailableError } from '../kit/source-errors.ts';
import { deltaApplier } from './delta-applier.ts';
import { graphClient, type GraphClient } from './graph-client.ts';
import { MESSAGE_SELECT, messageRecord } from './graph-mapping.ts';

const OBJECT = 'mail.message';
/** Ids that survive a move between folders, so a moved message stays one row. */
const PREFER = ['IdType="ImmutableId"'];

const CursorSchema = z.object({
  account: z.string(),
  folders: z.record(z.string(), z.object({ name: z.string(), deltaLink: z.url() })),
});
type Cursor = z.infer<typeof CursorSchema>;

const FoldersPageSchema = z.object({ value: z.array(z.object({ id: z.string().min(1), displayName: z.string() })), '@odata.nextLink': z.string().optional() });
const MeSchema = z.object({ mail: z.string().nullish(), userPrincipalName: z.string().nullish() });

function readShape<T>(schema: z.ZodType<T>, raw: unknown, what: string): T {
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw new SourceUnavailableError(`Microsoft Graph answered ${what} in an unexpected shape`);
  return parsed.data;
}

async function mailboxAddress(graph: GraphClient): Promise<string> {
  const me = readShape(MeSchema, await graph.get('/me?$select=mail,userPrincipalName'), '/me');
  return me.mail ?? me.userPrincipalName ?? '';
}

/**
 * Message envelopes through the message delta of each top-level mail folder, with `$select` of the
 * envelope fields only (bodies and attachments are never fetched). Each folder keeps its own deltaLink; a
 * folder seen for the first time gets an initial round.
 */
export async function syncMail(context: ConnectorContext, apiBase: string): Promise<SyncOutcome> {
  const graph = graphClient(context, apiBase);
  const previous = CursorSchema.safeParse(context.cursor);
  const cursor: Cursor | undefined = previous.success ? previous.data : undefined;
  const account = cursor?.account ?? (await mailboxAddress(graph));
  const folders: Array<{ id: string; displayName: string }> = [];
  for await (const page of walkPages((next) => graph.get(next ?? '/me/mailFolders?$top=100'), odataNextLink, { what: 'Microsoft Graph folders' })) {
    folders.push(...readShape(FoldersPageSchema, page, 'the folder list').value);
  }
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
