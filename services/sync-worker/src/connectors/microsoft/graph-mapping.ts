import { z } from 'zod';
import { SourceUnavailableError } from '../kit/source-errors.ts';
import { ianaZone } from './windows-zones.ts';

const EmailSchema = z.object({ emailAddress: z.object({ name: z.string().nullish(), address: z.string().nullish() }).nullish() }).nullish();
type Email = z.infer<typeof EmailSchema>;
const DateTimeTimeZoneSchema = z.object({ dateTime: z.string(), timeZone: z.string() });

// attendee resource: `emailAddress` is the emailAddress itself ({name, address}), not a recipient wrapping one.
const AttendeeSchema = z.object({ emailAddress: z.object({ name: z.string().nullish(), address: z.string().nullish() }).nullish(), status: z.object({ response: z.string().nullish() }).nullish() });
const EventSchema = z.object({
  id: z.string().min(1),
  subject: z.string().nullish(),
  isAllDay: z.boolean().nullish(),
  isCancelled: z.boolean().nullish(),
  showAs: z.string().nullish(),
  type: z.string().nullish(),
  seriesMasterId: z.string().nullish(),
  originalStart: z.string().nullish(),
  originalStartTimeZone: z.string().nullish(),
  start: DateTimeTimeZoneSchema,
  end: DateTimeTimeZoneSchema,
  location: z.object({ displayName: z.string().nullish() }).nullish(),
  organizer: EmailSchema,
  attendees: z.array(AttendeeSchema).nullish(),
});
type GraphEvent = z.infer<typeof EventSchema>;

/** What every occurrence of a series shares, read from its master and kept in the calendar cursor. */
export const SeriesSchema = z.object({
  title: z.string().nullable(),
  all_day: z.boolean(),
  location: z.string().nullable(),
  status: z.string(),
  organizer: z.string().nullable(),
  attendees: z.array(z.object({ name: z.string().nullable(), email: z.string().nullable(), response: z.string().nullable() })),
  timezone: z.string().nullable(),
});
export type Series = z.infer<typeof SeriesSchema>;

const MessageSchema = z.object({
  id: z.string().min(1),
  subject: z.string().nullish(),
  from: EmailSchema,
  toRecipients: z.array(EmailSchema).nullish(),
  ccRecipients: z.array(EmailSchema).nullish(),
  receivedDateTime: z.string().nullish(),
  isRead: z.boolean().nullish(),
  hasAttachments: z.boolean().nullish(),
  conversationId: z.string().nullish(),
  categories: z.array(z.string()).nullish(),
});

const AddressSchema = z.object({ street: z.string().nullish(), city: z.string().nullish(), state: z.string().nullish(), postalCode: z.string().nullish(), countryOrRegion: z.string().nullish() }).nullish();
const ContactSchema = z.object({
  id: z.string().min(1),
  displayName: z.string().nullish(),
  givenName: z.string().nullish(),
  surname: z.string().nullish(),
  companyName: z.string().nullish(),
  jobTitle: z.string().nullish(),
  emailAddresses: z.array(z.object({ name: z.string().nullish(), address: z.string().nullish() })).nullish(),
  mobilePhone: z.string().nullish(),
  businessPhones: z.array(z.string()).nullish(),
  homePhones: z.array(z.string()).nullish(),
  birthday: z.string().nullish(),
  homeAddress: AddressSchema,
  businessAddress: AddressSchema,
  otherAddress: AddressSchema,
  lastModifiedDateTime: z.string().nullish(),
});

function parse<T>(schema: z.ZodType<T>, item: unknown, what: string): T {
  const parsed = schema.safeParse(item);
  if (!parsed.success) throw new SourceUnavailableError(`Microsoft Graph sent a ${what} in an unexpected shape (${parsed.error.issues[0]?.path.join('.') ?? '?'})`);
  return parsed.data;
}

/** "Name <address>", the catalogue's form for people; the address alone when the name adds nothing. */
function person(value: Email): string | null {
  const address = value?.emailAddress?.address?.trim();
  const name = value?.emailAddress?.name?.trim();
  if (!address) return name || null;
  return name && name !== address ? `${name} <${address}>` : address;
}

/**
 * A timed event's DateTimeTimeZone as a UTC instant. The connector asks for UTC (`Prefer:
 * outlook.timezone="UTC"`), and Graph's dateTime carries no offset, so any other zone label would need a
 * Windows-zone table to read it right: refused rather than guessed.
 */
function utcInstant(value: z.infer<typeof DateTimeTimeZoneSchema>): string {
  const match = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d+)?$/.exec(value.dateTime);
  if (value.timeZone !== 'UTC' || !match) throw new SourceUnavailableError(`Microsoft Graph sent a time in '${value.timeZone}' where UTC was asked for`);
  const millis = (match[2] ?? '.000').slice(1, 4).padEnd(3, '0');
  return new Date(`${match[1]}.${millis}Z`).toISOString();
}

/** An all-day event's day: the date part of its midnight, never passed through a Date (no zone can shift it). */
function localDate(value: z.infer<typeof DateTimeTimeZoneSchema>): string {
  const match = /^(\d{4}-\d{2}-\d{2})T00:00:00(\.0+)?$/.exec(value.dateTime);
  if (!match?.[1]) throw new SourceUnavailableError('Microsoft Graph sent an all-day event that does not start at midnight');
  return match[1];
}

function shared(event: GraphEvent): Series {
  return {
    title: event.subject ?? null,
    all_day: event.isAllDay === true,
    location: event.location?.displayName || null,
    status: event.isCancelled ? 'cancelled' : event.showAs === 'tentative' ? 'tentative' : 'confirmed',
    organizer: person(event.organizer),
    attendees: (event.attendees ?? []).map((attendee) => ({
      name: attendee.emailAddress?.name ?? null,
      email: attendee.emailAddress?.address ?? null,
      response: attendee.status?.response ?? null,
    })),
    // The zone the event was made in, a Windows name (reference §6.3); start.timeZone is the UTC asked for.
    timezone: ianaZone(event.originalStartTimeZone),
  };
}

/** A series master (`type: seriesMaster`) → the fields its occurrences share. */
export function seriesOf(item: unknown): Series {
  return shared(parse(EventSchema, item, 'series master'));
}

export const isSeriesMaster = (item: Record<string, unknown>) => item.type === 'seriesMaster';

/**
 * One calendarView event → `calendar.event` (one row per occurrence). An occurrence of a series may come
 * stripped to `id`, `type`, `seriesMasterId`, `start`, `end` (issue 31: what real `calendarView/delta`
 * answers carry): every field it lacks is its series' (`series`, from the master). An exception carries
 * its own fields, which win.
 */
export function eventRecord(item: unknown, where: { calendar: string | null; series?: Series }): Record<string, unknown> & { source_id: string } {
  const event = parse(EventSchema, item, 'calendar event');
  const own = shared(event);
  const series = where.series;
  const has = (field: keyof GraphEvent) => (item as Record<string, unknown>)[field] !== undefined;
  const pick = <K extends keyof Series>(key: K, field: keyof GraphEvent): Series[K] => (series && !has(field) ? series[key] : own[key]);
  const allDay = has('isAllDay') || !series ? own.all_day : series.all_day;
  const inSeries = event.type === 'occurrence' || event.type === 'exception';
  const slot = event.originalStart ? new Date(event.originalStart).toISOString() : event.type === 'occurrence' ? (allDay ? localDate(event.start) : utcInstant(event.start)) : null;
  return {
    source_id: event.id,
    event_uid: event.seriesMasterId ?? event.id,
    recurrence_id: inSeries ? slot : null,
    calendar: where.calendar,
    title: pick('title', 'subject'),
    all_day: allDay,
    start_at: allDay ? null : utcInstant(event.start),
    end_at: allDay ? null : utcInstant(event.end),
    start_date: allDay ? localDate(event.start) : null,
    end_date: allDay ? localDate(event.end) : null,
    timezone: own.timezone ?? series?.timezone ?? null,
    location: pick('location', 'location'),
    status: has('isCancelled') || has('showAs') || !series ? own.status : series.status,
    organizer: pick('organizer', 'organizer'),
    attendees: pick('attendees', 'attendees'),
  };
}

/** The envelope fields asked for with `$select`: never `body`, `bodyPreview` or attachments. */
export const MESSAGE_SELECT = ['subject', 'from', 'toRecipients', 'ccRecipients', 'receivedDateTime', 'isRead', 'hasAttachments', 'conversationId', 'categories'] as const;

/** One message envelope → `mail.message`. */
export function messageRecord(item: unknown, where: { account: string | null; folder: string }): Record<string, unknown> & { source_id: string } {
  const message = parse(MessageSchema, item, 'message');
  const people = (list: Email[] | null | undefined) => (list ?? []).map(person).filter((value): value is string => value !== null);
  return {
    source_id: message.id,
    account: where.account,
    folder: where.folder,
    labels: message.categories ?? [],
    thread_id: message.conversationId ?? null,
    from: person(message.from),
    to: people(message.toRecipients),
    cc: people(message.ccRecipients),
    subject: message.subject ?? null,
    received_at: message.receivedDateTime ? new Date(message.receivedDateTime).toISOString() : null,
    is_read: message.isRead ?? null,
    has_attachments: message.hasAttachments ?? null,
    // Graph's message resource carries no size; reading it needs an extended property per message.
    size_bytes: null,
  };
}

/** One contact → `contacts.contact`. */
export function contactRecord(item: unknown): Record<string, unknown> & { source_id: string } {
  const contact = parse(ContactSchema, item, 'contact');
  const phones = [
    ...(contact.mobilePhone ? [{ type: 'mobile', value: contact.mobilePhone }] : []),
    ...(contact.businessPhones ?? []).map((value) => ({ type: 'business', value })),
    ...(contact.homePhones ?? []).map((value) => ({ type: 'home', value })),
  ];
  const addresses = (['home', 'business', 'other'] as const).flatMap((type) => {
    const address = contact[`${type}Address`];
    const parts = { street: address?.street ?? null, city: address?.city ?? null, region: address?.state ?? null, postal_code: address?.postalCode ?? null, country: address?.countryOrRegion ?? null };
    return Object.values(parts).some((value) => value) ? [{ type, ...parts }] : [];
  });
  return {
    source_id: contact.id,
    display_name: contact.displayName ?? null,
    given_name: contact.givenName ?? null,
    family_name: contact.surname ?? null,
    organization: contact.companyName ?? null,
    title: contact.jobTitle ?? null,
    emails: (contact.emailAddresses ?? []).filter((email) => email.address).map((email) => ({ type: null, value: email.address })),
    phones,
    addresses,
    // Graph sends a birthday as a midnight timestamp; its date part is the day, whatever the zone.
    birthday: contact.birthday ? contact.birthday.slice(0, 10) : null,
    updated_at: contact.lastModifiedDateTime ? new Date(contact.lastModifiedDateTime).toISOString() : null,
  };
}
