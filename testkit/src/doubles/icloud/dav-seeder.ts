/**
 * Writes test data into a local CalDAV/CardDAV server (Radicale) as its owner would from another client:
 * collections by MKCOL/MKCALENDAR, objects by PUT and DELETE. Test-side only; it is not the guard's traffic.
 */
export function createDavSeeder(options: { base: string; fetch: typeof fetch; user: string; password: string }) {
  const authorization = `Basic ${Buffer.from(`${options.user}:${options.password}`).toString('base64')}`;
  async function send(method: string, path: string, body?: string, contentType?: string): Promise<void> {
    const response = await options.fetch(new URL(path, options.base), {
      method,
      headers: { authorization, ...(contentType ? { 'content-type': contentType } : {}) },
      body,
    });
    await response.text();
    if (response.status >= 300) throw new Error(`${method} ${path} answered ${response.status}`);
  }
  return {
    addressBook: (path: string, name: string) =>
      send(
        'MKCOL',
        path,
        `<?xml version="1.0"?><d:mkcol xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:carddav"><d:set><d:prop><d:resourcetype><d:collection/><c:addressbook/></d:resourcetype><d:displayname>${name}</d:displayname></d:prop></d:set></d:mkcol>`,
        'application/xml',
      ),
    calendar: (path: string, name: string) =>
      send(
        'MKCALENDAR',
        path,
        `<?xml version="1.0"?><c:mkcalendar xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav"><d:set><d:prop><d:displayname>${name}</d:displayname><c:supported-calendar-component-set><c:comp name="VEVENT"/></c:supported-calendar-component-set></d:prop></d:set></c:mkcalendar>`,
        'application/xml',
      ),
    putVCard: (path: string, vcard: string) => send('PUT', path, vcard, 'text/vcard; charset=utf-8'),
    putEvent: (path: string, ics: string) => send('PUT', path, ics, 'text/calendar; charset=utf-8'),
    remove: (path: string) => send('DELETE', path),
  };
}
