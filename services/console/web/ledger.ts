import { api, ApiError, call, download, errorText } from './api.ts';
import { chainVerificationLines, type ChainVerification } from './chain-verification.ts';
import { toCsv } from './csv.ts';
import { button, h, isolated, labelled, notice, replace, select, table, time } from './dom.ts';
import { LEDGER_CSV_HEADERS, LEDGER_PAGE } from './texts.ts';
import { SECTORS, type AuditRow } from './types.ts';


const SINCE_CHOICES = [
  ['', 'Any date'],
  ['24h', 'Last 24 hours'],
  ['7d', 'Last 7 days'],
  ['30d', 'Last 30 days'],
] as const;
const SINCE_MS: Record<string, number> = { '24h': 86_400_000, '7d': 7 * 86_400_000, '30d': 30 * 86_400_000 };
const DECISIONS = [
  ['', 'All'],
  ['allow', 'Admitted'],
  ['deny', 'Denied'],
] as const;
const TOOLS = ['describe_context', 'get_schema', 'query', 'get_record', 'fetch_live', 'list_actions', 'invoke_action', 'initialize', 'oauth_token', 'ingest', 'export', 'set_sync_interval'];

const addressFilters = () => new URLSearchParams(location.hash.split('?')[1] ?? '');

function datalist(id: string, values: readonly string[]): HTMLDataListElement {
  return h('datalist', { id }, ...values.map((value) => h('option', { value })));
}

function decisionCell(row: AuditRow): HTMLElement {
  if (row.decision === 'deny') return h('span', { class: 'decision deny' }, `denied${row.deny_reason ? `: ${row.deny_reason}` : ''}`);
  return h('span', { class: `decision allow ${row.outcome}` }, row.outcome === 'error' ? 'admitted, failed' : 'admitted');
}

/**
 * Whether the ledger is the one that was written: the audit record's hash chain, walked on request
 * (it reads every row, so it does not run on every visit), with the last verified point, which chain
 * key and anchor were used, and what was proven.
 */
function chainPanel(): HTMLElement {
  const result = h('div', { class: 'chain-result', role: 'status' }, h('p', {}, 'Not verified in this visit yet.'));
  const verify = button('Verify the chain', () => void run());
  async function run(): Promise<void> {
    verify.disabled = true;
    replace(result, h('p', {}, 'Verifying every row…'));
    try {
      const answer = await api<ChainVerification>('GET', '/api/audit/verify');
      const lines: HTMLElement[] = chainVerificationLines(answer).map((line) => (line.tone ? notice(line.text, line.tone) : h('p', {}, line.text)));
      lines.push(h('p', {}, 'Verified at ', time(answer.verifiedAt)));
      replace(result, ...lines);
    } catch (error) {
      replace(result, notice(error instanceof ApiError ? error.message : errorText(error), 'error'));
    } finally {
      verify.disabled = false;
    }
  }
  return h('section', { class: 'chain', 'aria-label': 'Audit chain' }, h('h3', {}, 'Audit chain'), result, verify);
}

/**
 * The ledger (spec 4.5): six columns, pages of 100 through the API's cursor, filters by agent, tool,
 * sector, since and decision, and an Export CSV of the rows on screen (the operator's own read: no row).
 */
export async function renderLedger(root: HTMLElement): Promise<void> {
  const agent = h('input', { type: 'text', name: 'agent', autocomplete: 'off', spellcheck: false });
  const tool = h('input', { type: 'text', name: 'tool', autocomplete: 'off', spellcheck: false });
  tool.setAttribute('list', 'ledger-tools');
  const sector = h('input', { type: 'text', name: 'sector', autocomplete: 'off', spellcheck: false });
  sector.setAttribute('list', 'ledger-sectors');
  const since = select(SINCE_CHOICES);
  const decisionName = 'ledger-decision';
  const decisionRadios = DECISIONS.map(([value, text]) => ({ input: h('input', { type: 'radio', name: decisionName, value, checked: value === '' }), text }));
  const decision = h(
    'fieldset',
    { class: 'toggle' },
    h('legend', {}, 'Decision'),
    ...decisionRadios.map(({ input, text }) => h('label', { class: 'check' }, input, ` ${text}`)),
  );
  const status = h('div', { class: 'messages' });
  const results = h('div');
  const more = button('Load the next 100', () => void load(false), { hidden: true });
  const exportButton = button('Export CSV', () => exportCsv(), { disabled: true });
  const count = h('p', { class: 'count', role: 'status' });

  let rows: AuditRow[] = [];
  let next: string | null = null;
  let query = new URLSearchParams();

  /** The filters as the address keeps them (`#ledger?agent=…&since=24h`): a view that can be bookmarked, shared and gone back to. */
  function chosenFilters(): URLSearchParams {
    const params = new URLSearchParams();
    if (agent.value.trim()) params.set('agent', agent.value.trim());
    if (tool.value.trim()) params.set('tool', tool.value.trim());
    if (sector.value.trim()) params.set('sector', sector.value.trim());
    if (SINCE_MS[since.value]) params.set('since', since.value);
    const chosen = decisionRadios.find(({ input }) => input.checked)?.input.value ?? '';
    if (chosen) params.set('decision', chosen);
    return params;
  }

  /** The form set from the address; unknown values are left out. */
  function fillFromAddress(): void {
    const params = addressFilters();
    agent.value = params.get('agent') ?? '';
    tool.value = params.get('tool') ?? '';
    sector.value = params.get('sector') ?? '';
    const window = params.get('since') ?? '';
    since.value = SINCE_MS[window] ? window : '';
    const chosen = params.get('decision') ?? '';
    for (const { input } of decisionRadios) input.checked = input.value === (DECISIONS.some(([value]) => value === chosen) ? chosen : '');
  }

  /** The API query of the filters: the since choice becomes an instant now. */
  function filters(): URLSearchParams {
    const params = chosenFilters();
    params.set('limit', String(LEDGER_PAGE));
    const window = SINCE_MS[params.get('since') ?? ''];
    if (window) params.set('since', new Date(Date.now() - window).toISOString());
    return params;
  }

  /** Applying filters is a step in the browser's history; the same filters again just reload. */
  function apply(): void {
    const wanted = chosenFilters().toString();
    const hash = wanted ? `#ledger?${wanted}` : '#ledger';
    if (location.hash === hash) void load(true);
    else location.hash = hash;
  }

  function draw() {
    const cells = rows.map((row) => [
      time(row.created_at),
      row.agent_id === null ? h('span', { class: 'muted' }, '—') : isolated(row.agent_id),
      h('code', { class: 'tool' }, row.tool),
      row.sector ?? h('span', { class: 'muted' }, '—'),
      h('code', { class: 'args', title: JSON.stringify(row.args) }, JSON.stringify(row.args)),
      decisionCell(row),
    ]);
    replace(results, table('The ledger', ['Time', 'Who', 'Tool', 'Sector', 'Args', 'Decision'], cells, 'No rows match.'));
    count.textContent = `${rows.length} row${rows.length === 1 ? '' : 's'} loaded${next ? '; older rows remain' : ''}.`;
    // Offered only when the API says more rows remain (x-gateway-audit-has-more).
    more.hidden = next === null;
    exportButton.disabled = rows.length === 0;
  }

  async function load(fresh: boolean) {
    if (fresh) {
      query = filters();
      rows = [];
      next = null;
    }
    const params = new URLSearchParams(query);
    if (!fresh && next) params.set('before', next);
    try {
      const response = await call('GET', `/api/audit?${params.toString()}`);
      const page = (await response.json()) as AuditRow[];
      rows = [...rows, ...page];
      next = response.headers.get('x-gateway-audit-has-more') === 'true' ? response.headers.get('x-gateway-audit-next') : null;
      status.replaceChildren();
      draw();
    } catch (error) {
      replace(status, notice(error instanceof ApiError ? error.message : errorText(error), 'error'));
    }
  }

  function exportCsv() {
    const records = rows.map((row) => ({ ...row, args: JSON.stringify(row.args) }));
    download(`ledger-${new Date().toISOString().slice(0, 19).replaceAll(':', '')}.csv`, toCsv(LEDGER_CSV_HEADERS, records), 'text/csv');
  }

  const form = h(
    'form',
    { class: 'filters', 'aria-label': 'Filter the ledger' },
    labelled('Agent', agent, 'Exact agent name, or "operator"'),
    labelled('Tool', tool),
    labelled('Sector', sector, 'Hides rows with no sector'),
    labelled('Since', since),
    decision,
    h('div', { class: 'form-acts' }, h('button', { type: 'submit' }, 'Apply filters'), button('Clear', () => {
      form.reset();
      apply();
    })),
    datalist('ledger-tools', TOOLS),
    datalist('ledger-sectors', SECTORS),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    apply();
  });
  for (const { input } of decisionRadios) input.addEventListener('change', apply);
  since.addEventListener('change', apply);
  // Back, Forward, or an edited address: the form and the rows follow it.
  const followAddress = () => {
    if (!root.isConnected) return document.removeEventListener('console:query', followAddress);
    fillFromAddress();
    void load(true);
  };
  document.addEventListener('console:query', followAddress);
  fillFromAddress();

  replace(root, chainPanel(), form, status, h('div', { class: 'toolbar' }, count, exportButton, button('Refresh', () => void load(true))), results, h('div', { class: 'toolbar' }, more));
  await load(true);
}
