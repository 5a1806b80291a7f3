import { api, errorText } from './api.ts';
import { button, copyButton, h, isolated, labelled, notice, replace, select, table, time } from './dom.ts';
import { firstRunGuide } from './first-run.ts';
import { CLOUD_KEYS_NOTE, EXPIRY_CHOICES, KEY_ONCE, SESSIONS_END } from './texts.ts';
import { SECTORS, type Agent, type IssuedKey } from './types.ts';


const changed = () => document.dispatchEvent(new Event('console:changed'));

function sectorBoxes(legend: string, checked: readonly string[]): { fieldset: HTMLFieldSetElement; chosen(): string[] } {
  const boxes = SECTORS.map((sector) => h('input', { type: 'checkbox', name: 'sector', value: sector, checked: checked.includes(sector) || checked.includes('*') }));
  const fieldset = h(
    'fieldset',
    { class: 'sectors' },
    h('legend', {}, legend),
    ...boxes.map((box) => h('label', { class: 'check' }, box, ` ${box.value}`)),
  );
  return { fieldset, chosen: () => boxes.filter((box) => box.checked).map((box) => box.value) };
}

const expiryValue = (choice: string) => (choice === '' ? null : Number(choice));

function keyPanel(issued: IssuedKey, verb: string): HTMLElement {
  return h(
    'section',
    { class: 'key-panel', 'aria-label': `Key for ${issued.name}` },
    h('h3', {}, `${verb} ${issued.name}`),
    notice(KEY_ONCE, 'warning'),
    h('div', { class: 'url-line' }, h('code', { class: 'key', id: 'issued-key' }, issued.key), copyButton(() => issued.key, 'Copy key')),
    issued.expiresAt ? h('p', { class: 'hint' }, 'Expires ', time(issued.expiresAt)) : h('p', { class: 'hint' }, 'This key never expires.'),
  );
}

function sectorsText(agent: Agent): string {
  if (agent.sectors.includes('*')) return 'all sectors (*)';
  return agent.sectors.length === 0 ? 'none' : agent.sectors.join(', ');
}

const expiryText = (expiresInDays: number | null) => (expiresInDays === null ? 'never expires' : `expires in ${expiresInDays} days`);

/** What a create over an existing name changes (spec 5 rule 7: it is a rotation), asked before it is sent. */
function rotationQuestion(agent: Agent, sectors: string[], expiresInDays: number | null, yes: () => void, no: () => void): HTMLElement {
  const now = sectorsText(agent);
  const next = sectors.length === 0 ? 'none' : sectors.join(', ');
  const before = agent.expiresAt ? h('span', {}, 'expires ', time(agent.expiresAt)) : h('span', {}, 'never expires');
  return h(
    'div',
    { class: 'confirm', role: 'group', 'aria-label': `Replace ${agent.name}` },
    h('p', { tabIndex: -1, 'data-question': '' }, h('strong', {}, `An agent named ${agent.name} exists (${agent.status}).`), ' Creating it again rotates its key: the old key stops working and its live sessions end. Its grant changes:'),
    h(
      'dl',
      { class: 'facts changes' },
      h('dt', {}, 'Sectors'),
      h('dd', { 'data-change': 'sectors' }, now === next ? `${now} (unchanged)` : `${now} → ${next}`),
      h('dt', {}, 'Expiry'),
      h('dd', { 'data-change': 'expiry' }, before, ` → ${expiryText(expiresInDays)}`),
    ),
    button(`Yes, rotate ${agent.name} and replace its grant`, yes, { class: 'danger' }),
    button('Cancel', no),
  );
}

export async function renderAgents(root: HTMLElement): Promise<void> {
  const message = h('div', { class: 'messages' });
  const listArea = h('div');
  const say = (text: string, kind: 'ok' | 'error' | 'warning' = 'ok') => replace(message, notice(text, kind));

  async function act(work: () => Promise<unknown>, done: string) {
    try {
      await work();
      say(done);
      changed();
      await list();
    } catch (error) {
      say(errorText(error), 'error');
    }
  }

  function confirmRow(agent: Agent, what: string, warning: string, run: () => Promise<unknown>, done: string, yes = `Yes, ${what.toLowerCase()}`): HTMLElement {
    const box = h('div', { class: 'confirm', role: 'group', 'aria-label': `${what} ${agent.name}` });
    replace(
      box,
      h('p', {}, `${what} ${agent.name}? ${warning}`),
      button(yes, () => void act(run, done), { class: 'danger' }),
      button('Cancel', () => box.remove()),
    );
    return box;
  }

  function editForm(agent: Agent, holder: HTMLElement): HTMLElement {
    const boxes = sectorBoxes(`Sectors for ${agent.name}`, agent.sectors);
    const expiry = select([['keep', 'Keep the current deadline'], ...EXPIRY_CHOICES], 'keep');
    const form = h(
      'form',
      { class: 'edit', 'aria-label': `Edit ${agent.name}` },
      boxes.fieldset,
      labelled('Expiry', expiry),
      h('p', { class: 'hint' }, SESSIONS_END),
      h('button', { type: 'submit' }, 'Save'),
      button('Cancel', () => holder.replaceChildren()),
    );
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const body: Record<string, unknown> = { sectors: boxes.chosen() };
      if (expiry.value !== 'keep') body.expiresInDays = expiryValue(expiry.value);
      void act(() => api('PATCH', `/api/agents/${encodeURIComponent(agent.name)}`, body), `Saved ${agent.name}; its live sessions ended.`);
    });
    return form;
  }

  async function list() {
    let agents: Agent[];
    try {
      agents = await api<Agent[]>('GET', '/api/agents');
    } catch (error) {
      replace(listArea, notice(errorText(error), 'error'));
      return;
    }
    const rows = agents.map((agent) => {
      const holder = h('div', { class: 'row-panel' });
      const path = `/api/agents/${encodeURIComponent(agent.name)}`;
      const acts = h(
        'div',
        { class: 'acts' },
        button('Edit', () => replace(holder, editForm(agent, holder)), { 'aria-label': `Edit ${agent.name}` }),
        agent.status === 'revoked'
          ? null
          : button(
          'Rotate key',
          () =>
            replace(
              holder,
              confirmRow(agent, 'Rotate the key of', 'The old key stops working and live sessions end.', async () => {
                const issued = await api<IssuedKey>('POST', `${path}/rotate`);
                keyArea.replaceChildren(keyPanel(issued, 'New key for'));
              }, `Rotated the key of ${agent.name}.`, 'Yes, rotate'),
            ),
          { 'aria-label': `Rotate key: ${agent.name}` },
        ),
        agent.status === 'revoked'
          ? null
          : button('Revoke', () => replace(holder, confirmRow(agent, 'Revoke', 'Its key stops working and live sessions end.', () => api('POST', `${path}/revoke`), `Revoked ${agent.name}.`)), {
              'aria-label': `Revoke ${agent.name}`,
            }),
        button('Delete', () => replace(holder, confirmRow(agent, 'Delete', 'The grant is removed and live sessions end; its ledger rows stay.', () => api('DELETE', path), `Deleted ${agent.name}.`)), {
          'aria-label': `Delete ${agent.name}`,
          class: 'danger',
        }),
      );
      return [
        h('strong', {}, isolated(agent.name)),
        sectorsText(agent),
        h('span', { class: `state ${agent.status}` }, agent.status),
        time(agent.expiresAt, 'never'),
        time(agent.createdAt),
        h('div', {}, acts, holder),
      ];
    });
    replace(listArea, table('Agents', ['Name', 'Sectors', 'State', 'Expires', 'Created', 'Acts'], rows, 'No agents yet: create one above.'), agents.length === 0 ? await firstRunGuide() : null);
  }

  const keyArea = h('div', { class: 'key-area' });
  const name = h('input', { type: 'text', name: 'name', required: true, maxLength: 64, pattern: '[A-Za-z0-9][A-Za-z0-9._\\-]{0,63}', autocomplete: 'off', spellcheck: false });
  const boxes = sectorBoxes('Sectors it may read and act in', []);
  const expiry = select(EXPIRY_CHOICES, '90');
  const form = h(
    'form',
    { class: 'create', 'aria-label': 'Create an agent' },
    h('h3', {}, 'Create an agent'),
    labelled('Name', name, 'Letters, digits, ".", "_" or "-". Creating a name that exists rotates its key.'),
    boxes.fieldset,
    labelled('Expiry', expiry, CLOUD_KEYS_NOTE),
    h('button', { type: 'submit' }, 'Create agent'),
  );
  const question = h('div', { class: 'row-panel' });
  function create(wanted: string, sectors: string[], expiresInDays: number | null, rotates: boolean): void {
    question.replaceChildren();
    void act(async () => {
      const issued = await api<IssuedKey>('POST', '/api/agents', { name: wanted, sectors, expiresInDays });
      keyArea.replaceChildren(keyPanel(issued, rotates ? 'New key for' : 'Key for'));
      form.reset();
      expiry.value = '90';
    }, rotates ? `Rotated the key of ${wanted} and replaced its grant.` : `Created ${wanted}.`);
  }
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const wanted = name.value.trim();
    const sectors = boxes.chosen();
    const expiresInDays = expiryValue(expiry.value);
    void (async () => {
      let existing: Agent | undefined;
      try {
        existing = (await api<Agent[]>('GET', '/api/agents')).find((agent) => agent.name === wanted);
      } catch (error) {
        say(errorText(error), 'error');
        return;
      }
      if (!existing) return create(wanted, sectors, expiresInDays, false);
      // Spec 5 rule 7: creating a key under an existing name is a rotation. The route does it; the page asks first.
      replace(question, rotationQuestion(existing, sectors, expiresInDays, () => create(wanted, sectors, expiresInDays, true), () => question.replaceChildren()));
      question.querySelector<HTMLElement>('[data-question]')?.focus();
    })();
  });

  replace(root, form, question, keyArea, message, listArea);
  await list();
}
