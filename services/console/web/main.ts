import { renderConnectBand } from './connect-band.ts';
import { h, replace } from './dom.ts';
import { renderAccountMatches, showOpenMatchCount } from './account-matches.ts';
import { renderAgents } from './agents.ts';
import { renderActivity } from './activity.ts';
import { renderAlerts, showNewAlertCount } from './alerts.ts';
import { renderConnections } from './connections.ts';
import { renderLedger } from './ledger.ts';
import { renderInspector } from './inspector.ts';
import { renderExport } from './export.ts';
import { renderSettings } from './settings.ts';
import { renderStatus } from './status.ts';
import { renderThemeSwitch } from './theme.ts';

/** `followsQuery`: the screen reads its own address's query (the ledger's filters) and is not drawn again when only that changes. */
type Screen = { id: string; title: string; render(main: HTMLElement): Promise<void> | void; followsQuery?: boolean };

const SCREENS: Screen[] = [
  { id: 'agents', title: 'Agents', render: renderAgents },
  { id: 'connections', title: 'Connections', render: renderConnections },
  { id: 'account-matches', title: 'Account matches', render: renderAccountMatches },
  { id: 'ledger', title: 'The ledger', render: renderLedger, followsQuery: true },
  { id: 'activity', title: 'Activity', render: renderActivity },
  { id: 'alerts', title: 'Alerts', render: renderAlerts },
  { id: 'data', title: 'Data inspector', render: renderInspector },
  { id: 'export', title: 'Export', render: renderExport },
  { id: 'settings', title: 'Settings', render: renderSettings },
  { id: 'status', title: 'Status', render: renderStatus },
];

const BAND_REFRESH_MS = 5_000;

function current(): Screen {
  const id = location.hash.replace(/^#/, '').split('?')[0];
  return SCREENS.find((screen) => screen.id === id) ?? (SCREENS[0] as Screen);
}

async function show(focus: boolean): Promise<void> {
  const screen = current();
  const main = document.getElementById('main') as HTMLElement;
  for (const link of document.querySelectorAll<HTMLAnchorElement>('nav a')) {
    if (link.hash === `#${screen.id}`) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  document.title = `${screen.title} · Personal Context Gateway`;
  const toggle = document.querySelector('.nav-toggle');
  if (toggle) toggle.textContent = `Screens: ${screen.title}`;
  const heading = h('h2', { tabIndex: -1, id: 'screen-title' }, screen.title);
  const body = h('div', { class: 'screen', id: `screen-${screen.id}` });
  replace(main, heading, body);
  main.dataset.screen = screen.id;
  if (focus) heading.focus();
  await screen.render(body);
  main.dataset.ready = screen.id;
}

function start(): void {
  renderThemeSwitch(document.getElementById('theme-switch') as HTMLElement);
  const nav = document.getElementById('screens') as HTMLElement;
  const list = h('ul', { id: 'screen-list', class: 'screen-list' }, ...SCREENS.map((screen) => h('li', {}, h('a', { href: `#${screen.id}` }, screen.title))));
  // On a phone the list folds behind one button (the stylesheet shows the button below about 600 px).
  const toggle = h('button', { type: 'button', class: 'nav-toggle', 'aria-expanded': 'false', 'aria-controls': 'screen-list' }, 'Screens');
  toggle.addEventListener('click', () => toggle.setAttribute('aria-expanded', String(toggle.getAttribute('aria-expanded') !== 'true')));
  window.addEventListener('hashchange', () => toggle.setAttribute('aria-expanded', 'false'));
  replace(nav, toggle, list);
  const band = document.getElementById('connect-band') as HTMLElement;
  const refresh = () => {
    void renderConnectBand(band);
    void showOpenMatchCount(nav);
    void showNewAlertCount(nav);
  };
  refresh();
  setInterval(refresh, BAND_REFRESH_MS);
  document.addEventListener('console:changed', refresh);
  window.addEventListener('hashchange', () => {
    const screen = current();
    const main = document.getElementById('main') as HTMLElement;
    if (screen.followsQuery && main.dataset.ready === screen.id) document.dispatchEvent(new Event('console:query'));
    else void show(true);
  });
  void show(false);
}

start();
