import { createRandom, dayStart, isoDate, isoInstant, DAY_MS } from './random.ts';

const GIVEN = ['Ava', 'Ben', 'Chloé', 'Dmitri', 'Elif', 'Farah', 'Gabriel', 'Hana', 'Ivan', 'Jonas', 'Keiko', 'Luis', 'Maya', 'Noah', 'Olga', 'Priya', 'Quinn', 'Rafael', 'Sofia', 'Tariq'];
const FAMILY = ['Andersen', 'Becker', 'Chen', 'Dubois', 'Eriksen', 'Fischer', 'García', 'Hughes', 'Ito', 'Jensen', 'Kowalski', 'Lopez', 'Müller', 'Nakamura', 'Okafor', 'Patel', 'Rossi', 'Silva', 'Tanaka', 'Weber'];
const ORGS = ['Acme Corp', 'Globex', 'Initech', 'Umbrella Health', 'Stark Industries', 'Wayne Foundation', null];
const SUBJECTS = ['Quarterly review', 'Your receipt', 'Lunch on Thursday?', 'Invoice #', 'Flight confirmation', 'Re: project plan', 'Weekly newsletter', 'Security alert', 'Photos from the weekend', 'Meeting notes'];

export function contactsData() {
  const random = createRandom(303);
  return Array.from({ length: 300 }, (_, i) => {
    const given = GIVEN[i % GIVEN.length] as string;
    const family = FAMILY[Math.floor(i / GIVEN.length) % FAMILY.length] as string;
    const email = `${given}.${family}`.toLowerCase().normalize('NFD').replace(/[^a-z.]/g, '');
    return {
      source_id: `c-${i}`,
      display_name: `${given} ${family}`,
      given_name: given,
      family_name: family,
      organization: random.pick(ORGS),
      title: random.chance(0.5) ? random.pick(['Engineer', 'Designer', 'Physician', 'Teacher', 'Manager']) : null,
      emails: [{ type: 'home', value: `${email}@example.com` }],
      phones: random.chance(0.7) ? [{ type: 'mobile', value: `+1 555 01${String(i).padStart(2, '0')}` }] : [],
      // The first entry has a full card (several addresses): the largest contact row of the demo.
      addresses: i === 0 ? ['Home', 'Work', 'Summer house', 'Parents'].map((type, n) => ({ type, street: `${100 + n} Long Street, Apartment ${n + 7}`, city: 'Springfield', region: 'IL', postal_code: `6270${n}`, country: 'United States' })) : [],
      birthday: random.chance(0.4) ? `${random.chance(0.2) ? 1604 : random.int(1950, 2000)}-${String(random.int(1, 12)).padStart(2, '0')}-${String(random.int(1, 28)).padStart(2, '0')}` : null,
      updated_at: isoInstant(Date.UTC(2026, random.int(0, 10), random.int(1, 28))),
    };
  });
}

export function mailData(end: number, contacts: ReturnType<typeof contactsData>) {
  const random = createRandom(404);
  return Array.from({ length: 2000 }, (_, i) => {
    const sender = random.pick(contacts);
    const received = end - Math.floor(random.next() * 365 * DAY_MS);
    const subject = random.pick(SUBJECTS);
    return {
      source_id: `msg-${i}`,
      account: 'me@example.com',
      folder: random.chance(0.85) ? 'INBOX' : 'Archive',
      labels: random.chance(0.3) ? ['INBOX', random.pick(['finance', 'travel', 'family', 'work'])] : ['INBOX'],
      thread_id: `thr-${Math.floor(i / 3)}`,
      from: `${sender.display_name} <${sender.emails[0]?.value}>`,
      to: ['Me <me@example.com>'],
      cc: random.chance(0.1) ? [`${random.pick(contacts).display_name} <cc@example.com>`] : [],
      subject: subject.endsWith('#') ? `${subject}${random.int(1000, 9999)}` : subject,
      received_at: isoInstant(received),
      is_read: received < end - 3 * DAY_MS || random.chance(0.4),
      has_attachments: random.chance(0.15),
      size_bytes: random.int(2_000, 900_000),
    };
  });
}

export function calendarData(end: number) {
  const random = createRandom(505);
  const events: Array<Record<string, unknown>> = [];
  const HOUR = 3_600_000;
  for (let day = 180; day >= -60; day -= 1) {
    const start = dayStart(end, day);
    const weekday = new Date(start).getUTCDay();
    if (weekday >= 1 && weekday <= 5) {
      events.push({ source_id: `standup-${day}`, event_uid: 'standup@acme', recurrence_id: isoDate(start), calendar: 'Work', title: 'Team standup', start_at: isoInstant(start + 14 * HOUR), end_at: isoInstant(start + 14.25 * HOUR), all_day: false, timezone: 'America/New_York', location: 'Zoom', status: 'confirmed', organizer: 'Maya Chen <maya.chen@example.com>', attendees: [{ name: 'Me', email: 'me@example.com', response: 'accepted' }] });
    }
    if (weekday === 3) {
      events.push({ source_id: `1on1-${day}`, event_uid: 'one-on-one@acme', recurrence_id: isoDate(start), calendar: 'Work', title: '1:1 with Maya', start_at: isoInstant(start + 18 * HOUR), end_at: isoInstant(start + 18.5 * HOUR), all_day: false, timezone: 'America/New_York', status: 'confirmed', organizer: 'Maya Chen <maya.chen@example.com>', attendees: [] });
    }
    if (random.chance(0.08)) {
      events.push({ source_id: `misc-${day}`, event_uid: `misc-${day}`, calendar: 'Personal', title: random.pick(['Dentist', 'Dinner with Ava', 'Yoga class', 'Haircut', 'Parent-teacher meeting']), start_at: isoInstant(start + random.int(15, 23) * HOUR), end_at: isoInstant(start + 24 * HOUR), all_day: false, timezone: 'America/New_York', status: 'confirmed', attendees: [] });
    }
  }
  // Offsets in days from `end` (negative: already begun); the conference spans yesterday to the day after tomorrow.
  const allDay = [['Vacation: Lisbon', -20, 6], ['Company offsite', 40, 2], ['Thanksgiving', 5, 1], ['Mom\'s birthday', 70, 1], ['Conference: Berlin', -1, 4]] as const;
  for (const [i, [title, offset, length]] of allDay.entries()) {
    const first = dayStart(end, -offset);
    // The offsite invites the whole company: the largest calendar row of the demo.
    const attendees = title === 'Company offsite' ? Array.from({ length: 80 }, (_, n) => ({ name: `Colleague ${n + 1}`, email: `colleague.${n + 1}@acme.example`, response: n % 4 === 0 ? 'declined' : 'accepted' })) : [];
    events.push({ source_id: `allday-${i}`, event_uid: `allday-${i}`, calendar: title.startsWith('Company') || title.startsWith('Conference') ? 'Work' : 'Personal', title, start_at: null, end_at: null, all_day: true, start_date: isoDate(first), end_date: isoDate(first + length * DAY_MS), timezone: null, status: 'confirmed', attendees });
  }
  return events;
}
