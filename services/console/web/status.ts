import { api, errorText } from './api.ts';
import { button, h, isolated, notice, replace, table, time } from './dom.ts';
import { cardLink } from './connection-links.ts';
import type { Status, StatusProblem, Unavailable } from './types.ts';

const isDown = (value: unknown): value is Unavailable => typeof value === 'object' && value !== null && 'unavailable' in value;

function counts(value: unknown): HTMLElement {
  if (isDown(value)) return h('span', { class: 'muted' }, value.unavailable);
  if (typeof value !== 'object' || value === null) return h('span', {}, String(value));
  return h('span', {}, Object.entries(value).map(([key, count]) => `${key.replaceAll('_', ' ')} ${String(count)}`).join(', '));
}

/** Dropped audit rows in words (how many, or none); the counters by reason, machine names, fold away. */
function dropped(value: unknown): HTMLElement {
  if (isDown(value) || typeof value !== 'object' || value === null) return counts(value);
  const total = Object.values(value).reduce<number>((sum, count) => sum + (typeof count === 'number' ? count : 0), 0);
  return h(
    'span',
    {},
    total === 0 ? 'none' : `${total} row${total === 1 ? '' : 's'} dropped`,
    h('details', { class: 'raw-answer' }, h('summary', {}, 'By reason'), h('code', {}, Object.entries(value).map(([key, count]) => `${key} ${String(count)}`).join(', '))),
  );
}

/** The overall state in words, beside its colour (colour is never the only sign). */
export const OVERALL_WORDS = { ok: 'All is well', attention: 'Needs attention', failing: 'Failing' } as const;

/** 93784 → "1 d 2 h"; an uptime as a person reads it. */
export function uptimeText(seconds: number | null): string {
  if (seconds === null) return '—';
  if (seconds < 90) return `${seconds} s`;
  if (seconds < 90 * 60) return `${Math.round(seconds / 60)} min`;
  if (seconds < 48 * 3600) return `${Math.floor(seconds / 3600)} h ${Math.round((seconds % 3600) / 60)} min`;
  return `${Math.floor(seconds / 86400)} d ${Math.round((seconds % 86400) / 3600)} h`;
}

/** Status (design 4.4, issue 39): is everything all right, and if not, what and how to mend it. */
export async function renderStatus(root: HTMLElement): Promise<void> {
  let status: Status;
  try {
    // 503 while a store is down still carries the whole answer.
    status = (await (await fetch('/api/status', { cache: 'no-store' })).json()) as Status;
  } catch (error) {
    replace(root, notice(errorText(error), 'error'));
    return;
  }
  const message = h('div', { class: 'messages' });

  function act(problem: StatusProblem): HTMLElement | null {
    if (problem.connectionId) return cardLink(problem.connectionId, problem.problem === 'job_failed' ? 'Open its card' : 'Open its card to sign in again');
    if (problem.problem === 'chain_not_verified')
      return button('Verify the chain', async (event) => {
        const verify = event.currentTarget as HTMLButtonElement;
        verify.disabled = true;
        replace(message, notice('Verifying every row of the audit record…', 'info'));
        try {
          await api('GET', '/api/audit/verify');
          await renderStatus(root);
        } catch (error) {
          replace(message, notice(errorText(error), 'error'));
          verify.disabled = false;
        }
      });
    if (problem.problem === 'chain_broken') return h('a', { class: 'button', href: '#ledger' }, 'Open the ledger');
    return null;
  }

  const overall = status.overall;
  const problems = overall.problems.length === 0
    ? h('p', {}, 'Every store answers, agents can connect, every connection syncs, and the audit record is whole.')
    : h(
        'ul',
        { class: 'problems' },
        ...overall.problems.map((problem) =>
          h('li', { class: `problem ${problem.severity}`, 'data-problem': problem.problem }, h('strong', {}, problem.message), ' ', h('span', { class: 'mend' }, problem.mend), ' ', act(problem)),
        ),
      );
  const banner = h(
    'section',
    { class: `overall ${overall.state}`, 'aria-labelledby': 'overall-state', 'data-overall': overall.state },
    h('p', { class: 'overall-state', id: 'overall-state' }, OVERALL_WORDS[overall.state]),
    problems,
  );

  const mcp = status.mcp;
  const served =
    mcp.served === true
      ? h('span', {}, 'Served at ', h('code', {}, mcp.address), `, ${mcp.sessions} open session${mcp.sessions === 1 ? '' : 's'}, last seen `, time(mcp.lastSeenAt))
      : mcp.served === false
        ? h('span', { class: 'error-text' }, mcp.message)
        : h('span', { class: 'muted' }, mcp.unavailable);
  const processes = table(
    'Processes',
    ['Process', 'State', 'Version', 'Up for', 'Started'],
    status.processes.map((process) => [
      process.name,
      h('span', { class: `state ${process.state === 'running' ? 'active' : 'error'}` }, process.state === 'running' ? 'running' : 'not seen'),
      process.version ?? '—',
      uptimeText(process.uptimeSeconds),
      time(process.startedAt),
    ]),
    'The processes cannot be read while Redis is down.',
  );
  const failedJobs = isDown(status.failedJobs)
    ? h('p', { class: 'muted' }, status.failedJobs.unavailable)
    : table(
        'Failed sync jobs, last 24 hours',
        ['Connection', 'Failed at', 'Attempts', 'Error'],
        status.failedJobs.map((job) => [job.connectionId ? cardLink(job.connectionId, job.connectionName ?? job.connectionId) : h('span', { class: 'muted' }, 'a removed connection'), time(job.failedAt), job.attempts, h('span', { class: 'error-text' }, isolated(job.error))]),
        'No sync job failed in the last 24 hours.',
      );
  const connections = isDown(status.connections)
    ? h('p', { class: 'muted' }, status.connections.unavailable)
    : table(
        'Connections',
        ['Connection', 'Sector', 'Health', 'Last sync', 'Last error'],
        status.connections.map((connection) => [
          cardLink(connection.id, connection.display_name),
          connection.sector,
          h('span', { class: `health ${connection.health}` }, connection.health.replaceAll('_', ' ')),
          time(connection.last_synced_at, 'never'),
          connection.last_error ? isolated(connection.last_error) : '',
        ]),
        'No connections.',
      );
  replace(
    root,
    banner,
    message,
    h('h3', {}, 'Processes'),
    processes,
    h('h3', {}, 'Failed sync jobs (last 24 hours)'),
    failedJobs,
    h('h3', {}, 'Connections'),
    connections,
    h('h3', {}, 'Stores, agent port and queues'),
    h(
      'dl',
      { class: 'facts status' },
      h('dt', {}, 'MCP'),
      h('dd', {}, served),
      h('dt', {}, 'Postgres'),
      h('dd', {}, status.dependencies.postgres),
      h('dt', {}, 'Redis'),
      h('dd', {}, status.dependencies.redis),
      h('dt', {}, 'Audit chain'),
      h('dd', {}, status.chain ? h('span', {}, status.chain.intact ? 'verified intact ' : 'NOT intact, verified ', time(status.chain.verifiedAt)) : 'not verified since the Console started'),
      h('dt', {}, 'Sync queue'),
      h('dd', {}, counts(status.queues.sync)),
      h('dt', {}, 'Live queue'),
      h('dd', {}, counts(status.queues.live)),
      h('dt', {}, 'Audit rows waiting'),
      h('dd', {}, counts(status.audit.queued)),
      h('dt', {}, 'Audit rows dropped'),
      h('dd', {}, dropped(status.audit.dropped)),
    ),
  );
}
