import type { ServerResponse } from 'node:http';
import { googleError, opaque, pageOf, sendJson } from './google-http.ts';

export type DoublePerson = {
  resourceName: string;
  names?: Array<{ displayName?: string; givenName?: string; familyName?: string }>;
  emailAddresses?: Array<{ value: string; type?: string }>;
  phoneNumbers?: Array<{ value: string; canonicalForm?: string; type?: string }>;
  organizations?: Array<{ name?: string; title?: string }>;
  birthdays?: Array<{ date?: { year?: number; month?: number; day?: number }; text?: string }>;
  deleted?: boolean;
  seq: number;
};

/**
 * People API `people.connections.list` (reference §7.2): `personFields` required, `pageSize` paging,
 * `nextSyncToken` on the last page only when `requestSyncToken=true`, incremental answers with
 * `metadata.deleted` people, and a 400 `FAILED_PRECONDITION` whose reason is `EXPIRED_SYNC_TOKEN`
 * once the tokens expired (they last 7 days at Google).
 */
export function createPeoplePart(options: { now: number; tick: () => number }) {
  const people = new Map<string, DoublePerson>();
  let generation = 0;
  const state = { pageSize: 2 };
  const add = (person: Omit<DoublePerson, 'seq'>) => {
    const stored = { ...person, seq: options.tick() };
    people.set(person.resourceName, stored);
    return stored;
  };
  add({ resourceName: 'people/c1', names: [{ displayName: 'Ada Lovelace', givenName: 'Ada', familyName: 'Lovelace' }], emailAddresses: [{ value: 'ada@example.com', type: 'work' }], phoneNumbers: [{ value: '+44 20 7946 0000', canonicalForm: '+442079460000', type: 'mobile' }], organizations: [{ name: 'Analytical Engines', title: 'Programmer' }], birthdays: [{ date: { year: 1815, month: 12, day: 10 } }] });
  add({ resourceName: 'people/c2', names: [{ displayName: 'Grace Hopper', givenName: 'Grace', familyName: 'Hopper' }], emailAddresses: [{ value: 'grace@example.com' }], birthdays: [{ date: { month: 12, day: 9 } }] });
  add({ resourceName: 'people/c3', names: [{ displayName: 'Alan Turing' }], phoneNumbers: [{ value: '+44 161 496 0000' }] });

  function list(res: ServerResponse, query: URLSearchParams) {
    const personFields = query.get('personFields');
    // connections.list reference: `personFields` is required (the discovery document cannot say so: it marks
    // no query parameter required); the message is the one Google answers with (a guess at its exact words).
    if (!personFields) return googleError(res, 400, 'INVALID_ARGUMENT', 'personFields mask is required. Please specify one or more valid paths.', { status: 'INVALID_ARGUMENT', details: true });
    const syncToken = query.get('syncToken');
    const opened = syncToken ? opaque.open<{ seq: number; generation: number; personFields: string }>(syncToken) : undefined;
    if (syncToken && (!opened || opened.personFields !== personFields)) return googleError(res, 400, 'INVALID_ARGUMENT', 'Request must match the one that produced the sync token.', { status: 'INVALID_ARGUMENT', details: true });
    // An expired token is HTTP 400 with this message (garrytan/gbrain issue 5127 and freed-project/freed pull
    // request 1993 quote the answer; reference §7.2 left the status unconfirmed); FAILED_PRECONDITION and the
    // ErrorInfo reason EXPIRED_SYNC_TOKEN are the People API reference's (connections.list, `syncToken`).
    if (opened && opened.generation !== generation) {
      return googleError(res, 400, 'EXPIRED_SYNC_TOKEN', 'Sync token is expired. Clear local cache and retry call without the sync token.', { status: 'FAILED_PRECONDITION', details: true });
    }
    const fields = new Set(personFields.split(','));
    const rows = [...people.values()].filter((person) => (opened ? person.seq > opened.seq : !person.deleted));
    const seqNow = options.tick();
    const pageSize = Math.min(Number(query.get('pageSize') ?? '100'), state.pageSize);
    const page = pageOf(rows, query.get('pageToken'), pageSize, `${personFields}|${syncToken ?? ''}|${query.get('requestSyncToken') ?? ''}`);
    if (page === 'bad') return googleError(res, 400, 'INVALID_ARGUMENT', 'Request must match the one that produced the page token.', { status: 'INVALID_ARGUMENT', details: true });
    const connections = page.slice.map(({ seq: _seq, deleted, resourceName, ...person }) =>
      deleted
        ? { resourceName, etag: `%${resourceName}`, metadata: { deleted: true } }
        : {
            resourceName,
            etag: `%${resourceName}`,
            ...Object.fromEntries(Object.entries(person).filter(([key]) => fields.has(key))),
            ...(fields.has('metadata') ? { metadata: { sources: [{ type: 'CONTACT', id: resourceName.slice(8), updateTime: new Date(options.now).toISOString() }] } } : {}),
          },
    );
    const last = !page.next;
    return sendJson(res, 200, {
      connections,
      totalItems: rows.length,
      ...(page.next ? { nextPageToken: page.next } : {}),
      ...(last && (query.get('requestSyncToken') === 'true' || syncToken) ? { nextSyncToken: opaque.seal({ seq: seqNow, generation, personFields }) } : {}),
    });
  }

  return {
    people,
    state,
    add,
    update(resourceName: string, change: Partial<Omit<DoublePerson, 'seq' | 'resourceName'>>) {
      const person = people.get(resourceName);
      if (person) Object.assign(person, change, { seq: options.tick() });
    },
    remove(resourceName: string) {
      const person = people.get(resourceName);
      if (person) Object.assign(person, { deleted: true, seq: options.tick() });
    },
    expireSyncTokens: () => void (generation += 1),
    routes(res: ServerResponse, path: string, query: URLSearchParams): boolean {
      if (path !== '/v1/people/me/connections') return false;
      list(res, query);
      return true;
    },
  };
}
