import ICAL from 'ical.js';
import { calendarWindowEdges, DEFAULT_CALENDAR_WINDOW, type CalendarWindow } from '../kit/calendar-window.ts';

/** A rule that never ends stops here, window or not. */
const MAX_OCCURRENCES = 5_000;

export type Window = { start: Date; end: Date };

/**
 * Occurrences are expanded over the calendar sync window (`CALENDAR_PAST_DAYS`, `CALENDAR_FUTURE_DAYS`) around
 * the sync, by the connector itself (reference §8.4: servers' own expansion varies).
 */
export function syncWindow(now = Date.now(), window: CalendarWindow = DEFAULT_CALENDAR_WINDOW): Window {
  const { from, to } = calendarWindowEdges(now, window);
  return { start: new Date(from), end: new Date(to) };
}

const pad = (value: number, width = 2) => String(value).padStart(width, '0');
const dateOf = (time: ICAL.Time) => `${pad(time.year, 4)}-${pad(time.month)}-${pad(time.day)}`;

/** Milliseconds that `zone` is ahead of UTC at `utcMs`, read from Intl (for a TZID without its VTIMEZONE). */
function offsetMs(zone: string, utcMs: number): number {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' })
      .formatToParts(new Date(utcMs))
      .map((part) => [part.type, Number(part.value)]),
  );
  return Date.UTC(parts.year ?? 0, (parts.month ?? 1) - 1, parts.day ?? 1, parts.hour ?? 0, parts.minute ?? 0, parts.second ?? 0) - utcMs;
}

function knownZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/**
 * The UTC instant of a timed value. With a zone ical.js knows (UTC, or a VTIMEZONE the calendar embeds)
 * it converts; a TZID it was not given is read as an IANA name; a floating time is taken as UTC. Never the
 * process's own zone, which would make the row depend on where the worker runs.
 */
function instant(time: ICAL.Time, tzid: string | undefined): string {
  const zone = time.zone;
  if (zone && zone !== ICAL.Timezone.localTimezone) return time.toJSDate().toISOString();
  const wall = Date.UTC(time.year, time.month - 1, time.day, time.hour, time.minute, time.second);
  if (tzid !== undefined && knownZone(tzid)) {
    const guess = wall - offsetMs(tzid, wall);
    return new Date(wall - offsetMs(tzid, guess)).toISOString();
  }
  return new Date(wall).toISOString();
}

function tzidOf(event: ICAL.Event): string | undefined {
  const start = event.component.getFirstProperty('dtstart');
  const tzid = start?.getParameter('tzid');
  if (typeof tzid === 'string') return tzid;
  return event.startDate?.zone === ICAL.Timezone.utcTimezone ? 'UTC' : undefined;
}

function person(property: ICAL.Property | null): { name: string | null; email: string | null } {
  if (!property) return { name: null, email: null };
  const value = String(property.getFirstValue() ?? '');
  const cn = property.getParameter('cn');
  return { name: typeof cn === 'string' && cn !== '' ? cn : null, email: value.replace(/^mailto:/i, '') || null };
}

type Occurrence = { item: ICAL.Event; start: ICAL.Time; end: ICAL.Time | null; recurrenceId: ICAL.Time | null; tzid: string | undefined };

function row(sourceId: string, calendar: string, occurrence: Occurrence): Record<string, unknown> {
  const { item, start, tzid } = occurrence;
  const allDay = start.isDate;
  let end = occurrence.end;
  if (end === null || end.compare(start) <= 0) {
    end = start.clone();
    if (allDay) end.day += 1;
  }
  const organizer = person(item.component.getFirstProperty('organizer'));
  const status = item.component.getFirstPropertyValue('status');
  const recurrenceId = occurrence.recurrenceId === null ? null : occurrence.recurrenceId.isDate ? dateOf(occurrence.recurrenceId) : instant(occurrence.recurrenceId, tzid);
  return {
    source_id: `${sourceId}#${recurrenceId ?? ''}`,
    event_uid: item.uid || null,
    recurrence_id: recurrenceId,
    calendar,
    title: item.summary || null,
    all_day: allDay,
    start_at: allDay ? null : instant(start, tzid),
    end_at: allDay ? null : instant(end, tzid),
    start_date: allDay ? dateOf(start) : null,
    end_date: allDay ? dateOf(end) : null,
    timezone: tzid ?? null,
    location: item.location || null,
    status: typeof status === 'string' ? status.toLowerCase() : null,
    organizer: organizer.email === null ? null : organizer.name === null ? organizer.email : `${organizer.name} <${organizer.email}>`,
    attendees: item.attendees.map((attendee) => {
      const { name, email } = person(attendee);
      const response = attendee.getParameter('partstat');
      return { name, email, response: typeof response === 'string' ? response.toLowerCase() : null };
    }),
  };
}

function inWindow(record: Record<string, unknown>, window: Window): boolean {
  const start = Date.parse(String(record.start_at ?? `${String(record.start_date)}T00:00:00Z`));
  const end = Date.parse(String(record.end_at ?? `${String(record.end_date)}T00:00:00Z`));
  return end > window.start.getTime() && start < window.end.getTime();
}

/**
 * One iCalendar resource as `calendar.event` rows, one per occurrence in the window: the RRULE expanded
 * by ical.js, EXDATEs left out, and an exception (same UID, RECURRENCE-ID) replacing the occurrence it
 * moves. `VALUE=DATE` events are all-day with local dates and no instants; embedded VTIMEZONEs are honoured.
 */
export function eventRecords(sourceId: string, calendar: string, ics: string, window: Window): Array<Record<string, unknown>> {
  const root = new ICAL.Component(ICAL.parse(ics));
  for (const vtimezone of root.getAllSubcomponents('vtimezone')) {
    const tzid = vtimezone.getFirstPropertyValue('tzid');
    if (typeof tzid === 'string' && !ICAL.TimezoneService.has(tzid)) ICAL.TimezoneService.register(vtimezone);
  }
  const vevents = root.getAllSubcomponents('vevent');
  const masters = vevents.filter((vevent) => !vevent.hasProperty('recurrence-id'));
  const exceptions = vevents.filter((vevent) => vevent.hasProperty('recurrence-id'));
  const records: Array<Record<string, unknown>> = [];
  const windowEnd = ICAL.Time.fromJSDate(window.end, true);

  for (const master of masters) {
    const event = new ICAL.Event(master);
    const tzid = tzidOf(event);
    for (const exception of exceptions) if (exception.getFirstPropertyValue('uid') === event.uid) event.relateException(exception);
    if (!event.isRecurring()) {
      records.push(row(sourceId, calendar, { item: event, start: event.startDate, end: event.endDate, recurrenceId: null, tzid }));
      continue;
    }
    const iterator = event.iterator();
    for (let count = 0, next = iterator.next(); next && count < MAX_OCCURRENCES; count += 1, next = iterator.next()) {
      if (next.compare(windowEnd) >= 0) break;
      const details = event.getOccurrenceDetails(next);
      records.push(row(sourceId, calendar, { item: details.item, start: details.startDate, end: details.endDate, recurrenceId: details.recurrenceId, tzid }));
    }
  }
  // An exception whose series is not in this resource (an invitation to one occurrence) stands alone.
  const seriesUids = new Set(masters.map((master) => master.getFirstPropertyValue('uid')));
  for (const exception of exceptions.filter((vevent) => !seriesUids.has(vevent.getFirstPropertyValue('uid')))) {
    const event = new ICAL.Event(exception);
    records.push(row(sourceId, calendar, { item: event, start: event.startDate, end: event.endDate, recurrenceId: event.recurrenceId, tzid: tzidOf(event) }));
  }
  return records.filter((record) => inWindow(record, window));
}
