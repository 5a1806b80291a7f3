import { startAnsweringServer, type Answer, type SeenRequest } from '../kit/answering-server.ts';

/**
 * iCloud's CalDAV side played by the kit's answering server, for the answers a real server (Radicale)
 * cannot be made to give: a 429 with Retry-After, 5xx, a request left unanswered. It answers the discovery
 * of reference/providers.md §8.3 (principal at the entry host, a calendar home on a partition host) and one
 * calendar of one event read by sync-collection and calendar-multiget (§8.4, the collection itself listed
 * among the changes as iCloud does). `troubleNext` makes the next requests, whatever their path, answer
 * something else first; `hold` leaves every request unanswered until released. Plain HTTP on loopback: `transport` carries a request the iCloud guard has
 * already checked for `https://caldav.icloud.com:<port>/` or a `pNN-caldav.icloud.com` host to it.
 */
export type ICloudDavFront = Awaited<ReturnType<typeof startICloudDavFront>>;

const PRINCIPAL = '/1234567/principal/';
const HOME = '/1234567/calendars/';
const CALENDAR = `${HOME}home/`;
const EVENT = `${CALENDAR}front-event-1.ics`;
const STATUS_OK = '<d:status>HTTP/1.1 200 OK</d:status>';

const multistatus = (inner: string) =>
  `<?xml version="1.0" encoding="utf-8"?><d:multistatus xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav">${inner}</d:multistatus>`;
const response = (href: string, prop: string) => `<d:response><d:href>${href}</d:href><d:propstat><d:prop>${prop}</d:prop>${STATUS_OK}</d:propstat></d:response>`;
const davAnswer = (body: string): Answer => ({ status: 207, headers: { 'content-type': 'application/xml; charset=utf-8' }, body });

function event(): string {
  const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10).replaceAll('-', '');
  return ['BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//pcg test//EN', 'BEGIN:VEVENT', 'UID:front-event-1', 'SUMMARY:Answered after the trouble', `DTSTAMP:${tomorrow}T000000Z`,
    `DTSTART:${tomorrow}T090000Z`, `DTEND:${tomorrow}T093000Z`, 'END:VEVENT', 'END:VCALENDAR', ''].join('\r\n');
}

export async function startICloudDavFront() {
  const trouble: Answer[] = [];
  let held = false;
  /** When each request came and what it was answered. */
  const calls: Array<{ at: number; path: string; status: number | 'hang' }> = [];
  let partitionOrigin = '';

  const answered = (answer: (seen: SeenRequest) => Answer) => (seen: SeenRequest): Answer => {
    const given = held ? 'hang' : (trouble.shift() ?? answer(seen));
    calls.push({ at: Date.now(), path: seen.path, status: given === 'hang' ? 'hang' : given.status });
    return given;
  };
  const server = await startAnsweringServer({
    '/': answered(() => davAnswer(multistatus(response('/', `<d:current-user-principal><d:href>${PRINCIPAL}</d:href></d:current-user-principal>`)))),
    [PRINCIPAL]: answered(() => davAnswer(multistatus(response(PRINCIPAL, `<c:calendar-home-set><d:href>${partitionOrigin}${HOME}</d:href></c:calendar-home-set>`)))),
    [HOME]: answered(() =>
      davAnswer(multistatus(
        response(HOME, '<d:resourcetype><d:collection/></d:resourcetype>') +
          response(CALENDAR, '<d:resourcetype><d:collection/><c:calendar/></d:resourcetype><d:displayname>Home</d:displayname><d:sync-token>HwoQEgwAAAh4</d:sync-token><c:supported-calendar-component-set><c:comp name="VEVENT"/></c:supported-calendar-component-set>'),
      )),
    ),
    [CALENDAR]: answered((seen) =>
      seen.body.includes('sync-collection')
        ? davAnswer(multistatus(`${response(CALENDAR, '<d:getetag>"c1"</d:getetag>')}${response(EVENT, '<d:getetag>"e1"</d:getetag>')}<d:sync-token>HwoQEgwAAAh5</d:sync-token>`))
        : davAnswer(multistatus(response(EVENT, `<d:getetag>"e1"</d:getetag><c:calendar-data>${event()}</c:calendar-data>`))),
    ),
  });
  const port = new URL(server.base).port;
  partitionOrigin = `https://p07-caldav.icloud.com:${port}`;

  return {
    /** The CalDAV entry address to configure: an iCloud name, so the guard checks it like the real one. */
    entryUrl: `https://caldav.icloud.com:${port}/`,
    calls,
    /** The next requests answer these, in order, before the script goes on. */
    troubleNext(...answers: Answer[]) {
      trouble.push(...answers);
    },
    /** Leaves every request unanswered until the returned function is called (a source that stopped answering). */
    hold(): () => void {
      held = true;
      return () => {
        held = false;
      };
    },
    /** Whether `url` is this front's (its entry or partition host); `transport` carries it. */
    serves(url: URL): boolean {
      return url.port === port && /^(?:p\d+-)?caldav\.icloud\.com$/.test(url.hostname);
    },
    /** Carries a request for this front's host to the answering server, path and query kept. */
    transport(url: URL, init?: RequestInit): Promise<Response> {
      return fetch(`${server.base}${url.pathname}${url.search}`, init);
    },
    close: () => server.close(),
  };
}
