import { commonFields, field, type ObjectDef } from '../catalogue-types.ts';

export const calendarEvent: ObjectDef = {
  name: 'calendar.event',
  sector: 'calendar',
  table: 'calendar_events',
  description: 'One occurrence of a calendar event; a recurring event has one row per instance.',
  fields: [
    ...commonFields(),
    field('event_uid', 'string', 'The event series id; shared by every occurrence of a recurring event.'),
    field('recurrence_id', 'string', 'Which occurrence of the series this row is; null for single events.'),
    field('calendar', 'string', 'Calendar name.', { categorical: true }),
    field('title', 'string', 'Event title.'),
    field('start_at', 'timestamp', 'Start instant (UTC) of a timed event; null for all-day events.'),
    field('end_at', 'timestamp', 'End instant (UTC) of a timed event; null for all-day events.'),
    field('all_day', 'boolean', 'True for all-day events, which use start_date/end_date instead.', { nullable: false }),
    field('start_date', 'date', 'First day of an all-day event (local date).'),
    field('end_date', 'date', 'Day after the last day of an all-day event (exclusive).'),
    field('timezone', 'string', 'IANA time zone the event was created in.'),
    field('location', 'string', 'Location text.'),
    field('status', 'string', 'confirmed, tentative or cancelled.', { categorical: true }),
    field('organizer', 'string', 'Organizer as "Name <address>".'),
    field('attendees', 'json', 'List of {name, email, response}.'),
  ],
  notes: [
    'Timed events use start_at/end_at (UTC instants); all-day events use start_date/end_date (local dates) and have null start_at/end_at.',
    'end_date of an all-day event is exclusive: a one-day event on 2026-03-01 has end_date 2026-03-02.',
    'To find everything on a day, multi-day events included, run two queries: timed events with {field: start_at, op: overlaps, value: "tomorrow"} and all-day events with {field: start_date, op: overlaps, value: "tomorrow"} (or a [first, last] pair of dates); a filter on start_date alone misses an all-day event that began earlier.',
  ],
  fieldDocs: {
    start_at: 'UTC; null when all_day is true.',
    start_date: 'Local date; set only when all_day is true.',
    end_date: 'Exclusive.',
  },
  spans: [{ start: 'start_at', end: 'end_at' }, { start: 'start_date', end: 'end_date' }],
  defaultOrder: [{ field: 'start_at', direction: 'asc' }],
};
