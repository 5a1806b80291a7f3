import { api, errorText } from './api.ts';
import { bySector, drawAgentChart, sectorName, type DayCount } from './activity-chart.ts';
import { h, isolated, notice, replace, table, time } from './dom.ts';

type Use = { agent: string; sector: string; firstAt: string; lastAt: string; calls: number };
type ActivityView = {
  days: string[];
  daily: Array<DayCount & { agent: string }>;
  sectorUses: Use[];
  objectUses: Array<Use & { object: string | null }>;
  connections: Array<{
    id: string;
    displayName: string;
    provider: string;
    sector: string;
    status: string;
    lastSyncedAt: string | null;
    intervalMinutes: number | null;
    ageMinutes: number | null;
    fresh: boolean | null;
  }>;
};

const SWATCH_SECTORS = ['finance', 'health', 'mail', 'contacts', 'calendar', 'home', 'none'];

function legend(): HTMLElement {
  return h(
    'ul',
    { class: 'activity-legend', 'aria-label': 'Sectors' },
    ...SWATCH_SECTORS.map((sector) => h('li', {}, h('span', { class: `swatch sector-${sector}`, 'aria-hidden': 'true' }), sector)),
    h('li', {}, h('span', { class: 'swatch refusal', 'aria-hidden': 'true' }), 'refused (mark above the day)'),
  );
}

function agentSection(view: ActivityView, agent: string): HTMLElement {
  const counts = view.daily.filter((count) => count.agent === agent);
  const total = counts.reduce((sum, count) => sum + count.calls, 0);
  const denied = counts.reduce((sum, count) => sum + count.denied, 0);
  const rows = counts
    .slice()
    .sort((a, b) => b.day.localeCompare(a.day) || bySector(sectorName(a.sector), sectorName(b.sector)))
    .map((count) => [count.day, sectorName(count.sector), count.calls, count.denied] as const);
  return h(
    'section',
    { class: 'activity-agent', 'data-agent': agent },
    h('h4', {}, isolated(agent), ` · ${total} calls, ${denied} refused in ${view.days.length} days`),
    drawAgentChart(agent, view.days, counts),
    h('details', { class: 'activity-numbers' }, h('summary', {}, 'The numbers'), table(`Calls per day by ${agent}`, ['Day (UTC)', 'Sector', 'Calls', 'Refused'], rows, 'No calls.')),
  );
}

function usesTable(view: ActivityView): HTMLElement {
  const rows = [
    ...view.sectorUses.map((use) => ({ ...use, object: 'the sector' as string | null, kind: 0 })),
    ...view.objectUses.map((use) => ({ ...use, kind: 1 })),
  ]
    .sort((a, b) => a.agent.localeCompare(b.agent) || bySector(a.sector, b.sector) || a.kind - b.kind)
    .map((use) => [isolated(use.agent), use.sector, use.object === null ? 'unknown (arguments cut to [truncated])' : isolated(use.object), time(use.firstAt), time(use.lastAt), use.calls] as const);
  return table('First and last use', ['Agent', 'Sector', 'Object', 'First use', 'Last use', 'Calls'], rows, 'No agent has used a sector yet.');
}

function freshnessTable(view: ActivityView): HTMLElement {
  const rows = view.connections.map((connection) => {
    const verdict =
      connection.fresh === null
        ? 'no interval of its own'
        : connection.fresh
          ? 'fresh'
          : connection.ageMinutes === null
            ? 'never synced'
            : `stale: ${connection.ageMinutes - (connection.intervalMinutes ?? 0)} min past its interval`;
    return [
      isolated(connection.displayName || connection.provider),
      connection.sector,
      connection.status,
      time(connection.lastSyncedAt, 'never'),
      connection.intervalMinutes === null ? '—' : `${connection.intervalMinutes} min`,
      h('span', { class: connection.fresh === false ? 'fresh-no' : 'fresh-yes' }, verdict),
    ] as const;
  });
  return table('Data freshness per connection', ['Connection', 'Sector', 'Status', 'Last synced', 'Interval', 'Freshness'], rows, 'No connections.');
}

/** Activity at a glance (issue 41): from the daily rollup, never a scan of the record. */
export async function renderActivity(body: HTMLElement): Promise<void> {
  replace(body, h('p', {}, 'Loading…'));
  let view: ActivityView;
  try {
    view = await api<ActivityView>('GET', '/api/activity');
  } catch (error) {
    replace(body, notice(errorText(error), 'error'));
    return;
  }
  const agents = [...new Set(view.daily.map((count) => count.agent))].sort();
  replace(
    body,
    h('p', { class: 'hint' }, `Calls per day per agent over the last ${view.days.length} days (UTC), stacked by sector; a mark above a day counts its refusals. Console acts are not shown.`),
    legend(),
    h('h3', {}, 'Calls per day'),
    agents.length === 0 ? h('p', { class: 'empty' }, `No agent calls in the last ${view.days.length} days.`) : h('div', { class: 'activity-agents' }, ...agents.map((agent) => agentSection(view, agent))),
    h('h3', {}, 'First and last use'),
    usesTable(view),
    h('h3', {}, 'Data freshness'),
    freshnessTable(view),
  );
}
