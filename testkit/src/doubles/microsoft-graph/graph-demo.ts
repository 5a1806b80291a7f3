import type { GraphDouble } from './graph-double.ts';

const DAY = 86_400_000;
const HOUR = 3_600_000;

/** A demo Microsoft mailbox: a weekly meeting, a lunch, a day off, a few envelopes and two contacts. */
export function seedGraphDemo(graph: GraphDouble, now = Date.now()): void {
  const today = Math.floor(now / DAY) * DAY;
  graph.addWeeklySeries('demo-series-sync', 'Team sync', today + DAY + 9 * HOUR, 12);
  graph.store.put('event', { id: 'demo-lunch', subject: 'Lunch with Grace', start: today + 2 * DAY + 12 * HOUR, end: today + 2 * DAY + 13 * HOUR, type: 'singleInstance', location: 'Cafe' });
  const dayOff = new Date(today + 5 * DAY).toISOString().slice(0, 10);
  const after = new Date(today + 6 * DAY).toISOString().slice(0, 10);
  graph.store.put('event', { id: 'demo-day-off', subject: 'Day off', startDate: dayOff, endDate: after, type: 'singleInstance' });
  const from = { name: 'Grace Hopper', address: 'grace@navy.example' };
  const to = [{ name: 'Ada Lovelace', address: 'ada@contoso.example' }];
  graph.store.put('message', { id: 'demo-msg-1', parentFolderId: 'inbox', subject: 'Compiler notes', from, to, receivedDateTime: new Date(now - 3 * HOUR).toISOString(), body: 'never fetched' });
  graph.store.put('message', { id: 'demo-msg-2', parentFolderId: 'inbox', subject: 'Lunch?', from, to, receivedDateTime: new Date(now - HOUR).toISOString(), hasAttachments: true });
  graph.store.put('message', { id: 'demo-msg-3', parentFolderId: 'sentitems', subject: 'Re: Compiler notes', from: to[0] ?? from, to: [from], receivedDateTime: new Date(now - 2 * HOUR).toISOString() });
  graph.store.put('contact', { id: 'demo-contact-1', displayName: 'Grace Hopper', givenName: 'Grace', surname: 'Hopper', emailAddresses: [{ address: 'grace@navy.example' }] });
  graph.store.put('contact', { id: 'demo-contact-2', displayName: 'Alan Turing', mobilePhone: '+44 20 7946 0000' });
}
