import { api, errorText } from './api.ts';
import { button, h, isolated, notice, replace, table, time } from './dom.ts';

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
};

function described(alert: Alert): string {
  const detail = alert.detail;
  switch (alert.kind) {
    case 'first_sector':
      return `${alert.agent} used ${alert.sector} for the first time`;
    case 'first_object':
      return `${alert.agent} read ${alert.object} (${alert.sector}) for the first time`;
    case 'refusal_burst':
      return `${alert.agent} was refused ${String(detail.denies)} times within ${String(detail.minutes)} minutes`;
    case 'volume_spike':
      return `${alert.agent} made ${String(detail.calls)} calls on ${String(detail.day)}, against a usual ${String(detail.usual)} a day`;
    case 'needs_person':
      return `The connection ${String(detail.displayName || detail.provider)} (${alert.sector}) needs you to sign in again`;
  }
}

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
      'aria-label': `Mark seen: ${described(alert)}`,
    });
  const rows = alerts.map((alert) => [time(alert.occurredAt), h('span', { class: `alert-${alert.state}` }, isolated(described(alert))), alert.state, alert.state === 'new' ? acknowledge(alert) : '—'] as const);
  replace(
    body,
    h('p', { class: 'hint' }, `${fresh} new. An agent's first use of a sector or object, 10 refusals within 5 minutes, a day far above the agent's usual, and a connection that needs you.`),
    fresh > 0 ? button('Mark all seen', () => void api('POST', '/api/alerts/seen').then(changed, (error: unknown) => body.prepend(notice(errorText(error), 'error')))) : null,
    table('Alerts', ['When', 'What', 'State', ''], rows, 'No alerts.'),
  );
}
