import { api, errorText } from './api.ts';
import { button, h, isolated, labelled, notice, replace, table, time } from './dom.ts';

type Alert = {
  id: string;
  kind: 'first_sector' | 'first_object' | 'refusal_burst' | 'volume_spike' | 'needs_person';
  agent: string | null;
  sector: string | null;
  object: string | null;
  connectionId: string | null;
  detail: Record<string, unknown>;
  occurredAt: string;
  state: 'new' | 'seen';
  /** The alert in words, as its notification says it (the Console words it: shared/src/activity/alerts.ts). */
  text: string;
};

/** The navigation's link to the alerts says how many are new. */
export async function showNewAlertCount(nav: HTMLElement): Promise<void> {
  const link = nav.querySelector<HTMLAnchorElement>('a[href="#alerts"]');
  if (!link) return;
  try {
    const { new: count } = await api<{ new: number }>('GET', '/api/alerts/count');
    link.dataset.new = String(count);
    link.textContent = count === 0 ? 'Alerts' : `Alerts (${count} new)`;
  } catch {
    // The screen itself says what went wrong; the link keeps its name.
  }
}

type Destination = { set: boolean; kind: 'ntfy' | 'apprise' | null; savedAt: string | null };

/** Where alerts are sent: write-only (the address is never shown again once saved). */
async function destinationSection(rerender: () => void): Promise<HTMLElement> {
  const section = h('section', { class: 'alert-destination', 'aria-labelledby': 'alert-destination-title' }, h('h3', { id: 'alert-destination-title' }, 'Send alerts'));
  let destination: Destination;
  try {
    destination = await api<Destination>('GET', '/api/alerts/destination');
  } catch (error) {
    section.append(notice(errorText(error), 'error'));
    return section;
  }
  const input = h('input', { type: 'password', autocomplete: 'off', spellcheck: false, placeholder: 'https://ntfy.example/your-topic or https://apprise.example/notify/your-key' });
  const status = h('p', { class: 'hint', id: 'alert-destination-status' }, destination.set ? `Alerts and a daily digest go to the ${destination.kind === 'ntfy' ? 'ntfy topic' : 'Apprise API address'} saved ` : 'Off: no destination is saved.', destination.set ? time(destination.savedAt) : null);
  const form = h('form', {}, labelled('Destination address (ntfy topic or Apprise API /notify/<key>)', input, 'Kept secret: it is not shown again after saving.'), h('button', { type: 'submit' }, destination.set ? 'Replace' : 'Save'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void api('PUT', '/api/alerts/destination', { url: input.value }).then(rerender, (error: unknown) => section.append(notice(errorText(error), 'error')));
  });
  section.append(status, form);
  if (destination.set) section.append(button('Stop sending', () => void api('DELETE', '/api/alerts/destination').then(rerender, (error: unknown) => section.append(notice(errorText(error), 'error')))));
  return section;
}

export async function renderAlerts(body: HTMLElement): Promise<void> {
  const changed = () => {
    document.dispatchEvent(new Event('console:changed'));
    void renderAlerts(body);
  };
  let alerts: Alert[];
  try {
    alerts = await api<Alert[]>('GET', '/api/alerts');
  } catch (error) {
    replace(body, notice(errorText(error), 'error'));
    return;
  }
  const fresh = alerts.filter((alert) => alert.state === 'new').length;
  const acknowledge = (alert: Alert) =>
    button('Mark seen', () => void api('POST', `/api/alerts/${alert.id}/seen`).then(changed, (error: unknown) => body.prepend(notice(errorText(error), 'error'))), {
      'aria-label': `Mark seen: ${alert.text}`,
    });
  const rows = alerts.map((alert) => [time(alert.occurredAt), h('span', { class: `alert-${alert.state}` }, isolated(alert.text)), alert.state, alert.state === 'new' ? acknowledge(alert) : '—'] as const);
  replace(
    body,
    h('p', { class: 'hint' }, `${fresh} new. An agent's first use of a sector or object, 10 refusals within 5 minutes, a day far above the agent's usual, and a connection that needs you.`),
    fresh > 0 ? button('Mark all seen', () => void api('POST', '/api/alerts/seen').then(changed, (error: unknown) => body.prepend(notice(errorText(error), 'error')))) : null,
    table('Alerts', ['When', 'What', 'State', ''], rows, 'No alerts.'),
    await destinationSection(() => void renderAlerts(body)),
  );
}
