import { z } from 'zod';

const localDate = z.iso.date();
const EventTimeSchema = z.looseObject({ date: localDate.optional(), dateTime: z.iso.datetime({ offset: true }).optional(), timeZone: z.string().optional() });

export const GoogleEventSchema = z.looseObject({
  id: z.string().min(1),
  status: z.enum(['confirmed', 'tentative', 'cancelled']).optional(),
  summary: z.string().optional(),
  location: z.string().optional(),
  iCalUID: z.string().optional(),
  recurringEventId: z.string().optional(),
  originalStartTime: EventTimeSchema.optional(),
  start: EventTimeSchema.optional(),
  end: EventTimeSchema.optional(),
  organizer: z.looseObject({ email: z.string().optional(), displayName: z.string().optional() }).optional(),
  attendees: z.array(z.looseObject({ email: z.string().optional(), displayName: z.string().optional(), responseStatus: z.string().optional() })).optional(),
});
export type GoogleEvent = z.infer<typeof GoogleEventSchema>;

export type CalendarInfo = { id: string; name: string; timeZone: string | undefined };

/** One source id per occurrence per calendar: a shared event appears in each calendar it is on. */
export const eventSourceId = (calendarId: string, eventId: string) => `${calendarId}/${eventId}`;

const person = (email: string | undefined, name: string | undefined) => (email ? (name ? `${name} <${email}>` : email) : (name ?? null));
const originalOf = (time: z.infer<typeof EventTimeSchema> | undefined) => time?.dateTime ? new Date(time.dateTime).toISOString() : (time?.date ?? null);

/**
 * `calendar.event` of one occurrence. All-day events keep Google's `date`s as they are (local dates,
 * end exclusive): never turned into instants, so no gateway time zone can move them. Timed events become
 * UTC instants, with the event's own zone (or its calendar's) kept beside them.
 */
export function eventRecord(calendar: CalendarInfo, event: GoogleEvent) {
  const allDay = event.start?.date !== undefined;
  return {
    source_id: eventSourceId(calendar.id, event.id),
    event_uid: event.iCalUID ?? event.recurringEventId ?? event.id,
    recurrence_id: event.recurringEventId ? originalOf(event.originalStartTime) : null,
    calendar: calendar.name,
    title: event.summary ?? null,
    start_at: !allDay && event.start?.dateTime ? new Date(event.start.dateTime).toISOString() : null,
    end_at: !allDay && event.end?.dateTime ? new Date(event.end.dateTime).toISOString() : null,
    all_day: allDay,
    start_date: allDay ? (event.start?.date ?? null) : null,
    end_date: allDay ? (event.end?.date ?? null) : null,
    timezone: event.start?.timeZone ?? calendar.timeZone ?? null,
    location: event.location ?? null,
    status: event.status ?? 'confirmed',
    organizer: person(event.organizer?.email, event.organizer?.displayName),
    attendees: event.attendees ? event.attendees.map((attendee) => ({ name: attendee.displayName ?? null, email: attendee.email ?? null, response: attendee.responseStatus ?? null })) : null,
  };
}

/** Whether an occurrence touches the window [from, to) (epoch ms); all-day dates are compared as whole UTC days, a day's slack either side. */
export function inWindow(event: GoogleEvent, from: number, to: number): boolean {
  const DAY = 86_400_000;
  if (event.start?.date && event.end?.date) return Date.parse(`${event.end.date}T00:00:00Z`) + DAY > from && Date.parse(`${event.start.date}T00:00:00Z`) - DAY < to;
  if (event.start?.dateTime && event.end?.dateTime) return Date.parse(event.end.dateTime) > from && Date.parse(event.start.dateTime) < to;
  return false;
}
