import { api, errorText } from './api.ts';
import { button, h, labelled, notice, replace } from './dom.ts';
import { renderProviderApps } from './provider-apps.ts';
import { RETRY_GUIDANCE } from './texts.ts';
import type { Settings } from './types.ts';

/** Spec 5 rule 8, in the operator's words. */
export const ORIGIN_RULES = [
  'An origin only: scheme, host and an optional port, with no path, query, fragment, user name or password.',
  'A default port (443 for https) is dropped when saved; another port is kept. Hosted agents connect out on port 443 only.',
  'Agents connect to the origin followed by /mcp. Saving an origin switches the sign-in bridge on; clearing it switches it off.',
];

const ZONE_SOURCES: Record<Settings['timeZoneSource'], string> = {
  setting: 'saved here',
  hub: "the home hub's own zone, used while none is saved here",
  machine: "this machine's zone, used while none is saved here and no home hub reports one",
};

/** The person's time zone: relative dates ("last month") and local dates are read in it. */
function renderTimeZone() {
  const message = h('div', { class: 'messages' });
  const current = h('p', { class: 'zone-state' });
  const input = h('input', { type: 'text', name: 'timeZone', placeholder: 'Europe/Berlin', autocomplete: 'off', spellcheck: false });
  function show(settings: Settings) {
    input.value = settings.timeZoneSource === 'setting' ? settings.timeZone : '';
    replace(current, 'Agents read dates in ', h('code', { id: 'time-zone' }, settings.timeZone), ` (${ZONE_SOURCES[settings.timeZoneSource]}).`);
  }
  async function save(timeZone: string | null) {
    try {
      const settings = await api<Settings>('PUT', '/api/settings', { timeZone });
      show(settings);
      replace(message, notice(timeZone === null ? `Time zone cleared; agents now read dates in ${settings.timeZone}.` : `Saved ${settings.timeZone}.`, 'ok'));
    } catch (error) {
      replace(message, notice(errorText(error), 'error'));
    }
  }
  const form = h(
    'form',
    { class: 'settings', 'aria-label': 'Time zone' },
    h('h3', {}, "The person's time zone"),
    current,
    labelled('Time zone (IANA name)', input),
    h('div', { class: 'form-acts' }, h('button', { type: 'submit' }, 'Save time zone'), button('Use the default', () => void save(null))),
    message,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void save(input.value.trim());
  });
  return { form, show };
}

/** Settings (design 4.4): the public origin and the bridge's state; the person's time zone; each OAuth provider's application credentials. */
export async function renderSettings(root: HTMLElement): Promise<void> {
  const message = h('div', { class: 'messages' });
  const state = h('div', { class: 'bridge-state' });
  const origin = h('input', { type: 'url', name: 'publicOrigin', placeholder: 'https://pcg.example.com', autocomplete: 'off', spellcheck: false });
  const changed = () => document.dispatchEvent(new Event('console:changed'));

  function showState(settings: Settings) {
    origin.value = settings.publicOrigin ?? '';
    replace(
      state,
      settings.mcpUrl
        ? h('p', {}, 'Bridge on. Hosted agents connect to ', h('code', { id: 'bridge-url' }, settings.mcpUrl), '.')
        : h('p', {}, 'Bridge off: no public origin is saved, so only agents on this machine can connect.'),
      settings.mcpUrl ? h('p', { class: 'hint' }, RETRY_GUIDANCE) : null,
    );
  }

  async function save(publicOrigin: string | null) {
    try {
      const settings = await api<Settings>('PUT', '/api/settings', { publicOrigin });
      showState(settings);
      replace(message, notice(publicOrigin === null ? 'Public origin cleared; the bridge is off.' : `Saved ${settings.publicOrigin ?? ''}; the bridge is on.`, 'ok'));
      changed();
    } catch (error) {
      replace(message, notice(errorText(error), 'error'));
    }
  }

  const form = h(
    'form',
    { class: 'settings', 'aria-label': 'Public origin' },
    h('h3', {}, 'Public origin'),
    h('ul', { class: 'rules' }, ...ORIGIN_RULES.map((rule) => h('li', {}, rule))),
    labelled('Public origin', origin),
    h('div', { class: 'form-acts' }, h('button', { type: 'submit' }, 'Save origin'), button('Clear origin', () => void save(null))),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void save(origin.value.trim());
  });
  // A URL input refuses "pcg.example.com" itself; the server's message says what to save instead.
  form.noValidate = true;
  const apps = h('section', { class: 'provider-apps', 'aria-label': 'Provider applications' });
  const zone = renderTimeZone();
  replace(root, form, message, state, zone.form, apps);
  try {
    const settings = await api<Settings>('GET', '/api/settings');
    showState(settings);
    zone.show(settings);
  } catch (error) {
    replace(message, notice(errorText(error), 'error'));
  }
  await renderProviderApps(apps);
}
