import type { GraphContact, GraphMessage, GraphOccurrence, Render } from './graph-store.ts';
import { allDayTimeZone, dateTimeTimeZone } from './graph-time.ts';

const email = (person: { name?: string; address: string }) => ({ emailAddress: { name: person.name ?? person.address, address: person.address } });

function when(event: GraphOccurrence, zone: string) {
  return event.startDate
    ? { start: allDayTimeZone(event.startDate, zone), end: allDayTimeZone(event.endDate ?? event.startDate, zone) }
    : { start: dateTimeTimeZone(event.start ?? 0, zone), end: dateTimeTimeZone(event.end ?? 0, zone) };
}

/**
 * An event as Graph renders it. In a `calendarView/delta` answer an occurrence of a series carries only
 * `@odata.type`, `@odata.etag`, `id`, `type`, `seriesMasterId`, `start` and `end`, and the series master comes
 * in the same round with the first occurrence's times; exceptions and single events come whole. Graph's
 * delta pages (delta-query-events, event-delta) show no occurrence; the property set is the one real answers
 * carry (microsoftgraph/microsoft-graph-docs issues 7632 and 22197, the second with a whole occurrence
 * quoted; ridafkih/keeper.sh pull request 409: "each expanded occurrence item carries only id, type,
 * seriesMasterId, start, and end", the master "with the first occurrence's start/end"). Outside a delta round
 * (calendarView, instances, GET event) an occurrence has the series' properties (event resource page:
 * subject, location, organizer, attendees are properties of every event type; issue 22197: "/calendarView
 * and /events/{id} return full events").
 */
export function renderEvent(event: GraphOccurrence, master: GraphOccurrence | undefined, how: Render): Record<string, unknown> {
  // An all-day occurrence's day is its own; its all-day flag is the series' (a master's startDate marks it).
  const series = event.type === 'occurrence' && master ? { ...master, ...event, subject: master.subject } : event;
  if (how.delta && event.type === 'occurrence') {
    return { '@odata.type': '#microsoft.graph.event', '@odata.etag': `W/"${event.id.slice(-6)}"`, id: event.id, type: event.type, seriesMasterId: event.seriesMasterId ?? null, ...when(event, how.zone) };
  }
  return {
    '@odata.etag': `W/"${event.id.slice(-6)}"`,
    id: event.id,
    subject: series.subject,
    isAllDay: event.startDate !== undefined,
    isCancelled: series.isCancelled ?? false,
    type: event.type,
    seriesMasterId: event.seriesMasterId ?? null,
    originalStart: event.originalStart === undefined ? null : new Date(event.originalStart).toISOString().replace('.000Z', 'Z'),
    // event resource: the zone the event was created in, a Windows name (reference §6.3).
    originalStartTimeZone: series.timeZone ?? 'Pacific Standard Time',
    originalEndTimeZone: series.timeZone ?? 'Pacific Standard Time',
    showAs: 'busy',
    ...when(event, how.zone),
    location: { displayName: series.location ?? '' },
    organizer: series.organizer ? email(series.organizer) : null,
    attendees: (series.attendees ?? []).map((person) => ({ ...email(person), type: 'required', status: { response: person.response, time: '0001-01-01T00:00:00Z' } })),
    body: { contentType: 'html', content: '<p>event body</p>' },
  };
}

export function renderMessage(message: GraphMessage, select: string[] | undefined): Record<string, unknown> {
  const full: Record<string, unknown> = {
    id: message.id,
    subject: message.subject,
    from: email(message.from),
    sender: email(message.from),
    toRecipients: message.to.map(email),
    ccRecipients: (message.cc ?? []).map(email),
    receivedDateTime: message.receivedDateTime,
    isRead: message.isRead ?? false,
    hasAttachments: message.hasAttachments ?? false,
    conversationId: message.conversationId ?? `conv-${message.id}`,
    categories: message.categories ?? [],
    parentFolderId: message.parentFolderId,
    bodyPreview: (message.body ?? '').slice(0, 255),
    body: { contentType: 'text', content: message.body ?? '' },
  };
  if (!select) return full;
  return Object.fromEntries(Object.entries(full).filter(([name]) => name === 'id' || select.includes(name)));
}

export function renderContact(contact: GraphContact): Record<string, unknown> {
  return {
    id: contact.id,
    parentFolderId: contact.parentFolderId ?? 'contacts-default',
    displayName: contact.displayName,
    givenName: contact.givenName ?? null,
    surname: contact.surname ?? null,
    companyName: contact.companyName ?? null,
    jobTitle: contact.jobTitle ?? null,
    emailAddresses: contact.emailAddresses ?? [],
    mobilePhone: contact.mobilePhone ?? null,
    businessPhones: contact.businessPhones ?? [],
    homePhones: [],
    birthday: contact.birthday ?? null,
    homeAddress: contact.homeAddress ?? {},
    businessAddress: {},
    otherAddress: {},
    lastModifiedDateTime: '2026-01-05T10:00:00Z',
  };
}
