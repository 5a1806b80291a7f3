import { DEFAULT_CONTACT_FOLDER, PRIMARY_CALENDAR, type GraphMessage } from './graph-store.ts';

/** The parent of the top-level mail folders (the well-known `msgfolderroot`). */
export const MAIL_ROOT = 'msgfolderroot';

/**
 * A mail folder of the double. A search folder (mailSearchFolder resource: a virtual folder of the items
 * that match its query in its source folders; created under the well-known `searchfolders` folder) has
 * `search` set; its messages live in other folders.
 */
export type GraphFolder = {
  id: string;
  displayName: string;
  parentFolderId: string;
  isHidden?: boolean;
  search?: { sourceFolderIds: string[]; unreadOnly: boolean };
};

export type GraphCalendar = { id: string; name: string; isDefaultCalendar: boolean };
export type GraphContactFolder = { id: string; displayName: string; parentFolderId: string };

/** The mailbox's folders at start: the well-known ones by their names as ids, as Graph accepts them, and one search folder. */
export const GRAPH_FOLDERS: readonly GraphFolder[] = [
  { id: 'inbox', displayName: 'Inbox', parentFolderId: MAIL_ROOT },
  { id: 'sentitems', displayName: 'Sent Items', parentFolderId: MAIL_ROOT },
  { id: 'searchfolders', displayName: 'Search Folders', parentFolderId: MAIL_ROOT },
  { id: 'search-unread', displayName: 'Unread Mail', parentFolderId: 'searchfolders', search: { sourceFolderIds: ['inbox'], unreadOnly: true } },
];

export const GRAPH_CALENDARS: readonly GraphCalendar[] = [{ id: PRIMARY_CALENDAR, name: 'Calendar', isDefaultCalendar: true }];
export const GRAPH_CONTACT_FOLDERS: readonly GraphContactFolder[] = [];

/**
 * A mailFolder as `GET /me/mailFolders` and `…/childFolders` render it (mailFolder resource properties);
 * a search folder carries its derived type's `@odata.type` and properties (mailSearchFolder resource).
 */
export function renderFolder(folder: GraphFolder, all: readonly GraphFolder[]): Record<string, unknown> {
  const base = {
    id: folder.id,
    displayName: folder.displayName,
    parentFolderId: folder.parentFolderId,
    childFolderCount: all.filter((child) => child.parentFolderId === folder.id).length,
    unreadItemCount: 0,
    totalItemCount: 0,
    isHidden: folder.isHidden ?? false,
  };
  if (!folder.search) return base;
  return {
    '@odata.type': '#microsoft.graph.mailSearchFolder',
    ...base,
    isSupported: true,
    includeNestedFolders: false,
    sourceFolderIds: folder.search.sourceFolderIds,
    filterQuery: folder.search.unreadOnly ? 'isRead eq false' : '',
  };
}

/** Which messages a search folder shows (its query over its source folders). */
export function searchMatches(folder: GraphFolder): ((message: GraphMessage) => boolean) | undefined {
  const search = folder.search;
  if (!search) return undefined;
  return (message) => search.sourceFolderIds.includes(message.parentFolderId) && (!search.unreadOnly || message.isRead !== true);
}

export { DEFAULT_CONTACT_FOLDER, PRIMARY_CALENDAR };
