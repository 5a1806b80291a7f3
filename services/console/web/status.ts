import { errorText } from './api.ts';
import { h, notice, replace, table, time } from './dom.ts';
import type { Status, Unavailable } from './types.ts';

const isDown = (value: unknown): value is Unavailable => typeof value === 'object' && value !== null && 'unavailable' in value;

function counts(value: unknown): HTMLElement {
  if (isDown(value)) return h('span', { class: 'muted' }, value.unavailable);
  if (typeof value !== 'object' || value === null) return h('span', {}, String(value));
  return h('span', {}, Object.entries(value).map(([key, count]) => `${key.replaceAll('_', ' ')} ${String(count)}`).join(', '));
}

/** Status (design 4.4): `/api/status` as a person reads it. */
export async function renderStatus(root: HTMLElement): Promise<void> {
  let status: Status;
  try {
    status = (await (await fetch('/api/status', { cache: 'no-store' })).json()) as Status;
  } catch (error) {
    replace(root, notice(errorText(error), 'error'));
    return;
  }
  const mcp = status.mcp;
  const served =
    mcp.served === true
      ? h('span', {}, 'Served at ', h('code', {}, mcp.address), `, ${mcp.sessions} open session${mcp.sessions === 1 ? '' : 's'}, last seen `, time(mcp.lastSeenAt))
      : mcp.served === false
        ? h('span', { class: 'error-text' }, mcp.message)
        : h('span', { class: 'muted' }, mcp.unavailable);
  const connections = isDown(status.connections)
    ? h('p', { class: 'muted' }, status.connections.unavailable)
    : table(
        'Connections',
        ['Connection', 'Sector', 'Status', 'Last sync', 'Last error'],
        status.connections.map((connection) => [connection.display_name, connection.sector, connection.status, time(connection.last_synced_at, 'never'), connection.last_error ?? '']),
        'No connections.',
      );
  replace(
    root,
    h(
      'dl',
      { class: 'facts status' },
      h('dt', {}, 'MCP'),
      h('dd', {}, served),
      h('dt', {}, 'Postgres'),
      h('dd', {}, status.dependencies.postgres),
      h('dt', {}, 'Redis'),
      h('dd', {}, status.dependencies.redis),
      h('dt', {}, 'Sync queue'),
      h('dd', {}, counts(status.queues.sync)),
      h('dt', {}, 'Live queue'),
      h('dd', {}, counts(status.queues.live)),
      h('dt', {}, 'Audit rows waiting'),
      h('dd', {}, counts(status.audit.queued)),
      h('dt', {}, 'Audit rows dropped'),
      h('dd', {}, counts(status.audit.dropped)),
    ),
    h('h3', {}, 'Last sync per connection'),
    connections,
  );
}
