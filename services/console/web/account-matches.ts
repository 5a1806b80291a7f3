import { api, errorText } from './api.ts';
import { button, h, isolated, notice, replace, table, time } from './dom.ts';
import { MATCH_HINT } from './texts.ts';
import type { AccountMatch as MatchView, MatchSide } from './types.ts';

/** How the pair's transactions match one by one today (design 8.3), as GET /api/finance/account-matches gives it. */
type AccountMatch = MatchView & { transactions?: { both: number; onlyFirst: number; onlySecond: number } };

const lastFour = (side: MatchSide) => (side.lastFour ? `last 4: ${side.lastFour}` : 'no last 4 shown');
const accountName = (side: MatchSide) => side.name ?? `${side.sourceId} (not listed by the source now)`;

function sideText(side: MatchSide): HTMLElement {
  return h(
    'div',
    { class: 'match-side' },
    h('strong', {}, accountName(side)),
    h('span', { class: 'muted' }, ` · ${lastFour(side)}`),
    h('div', { class: 'muted' }, isolated(side.connectionName)),
  );
}

const count = (n: number, what = 'transaction') => `${n} ${what}${n === 1 ? '' : 's'}`;

/** What each answer will change for agents, in numbers of transactions (design 8.3: merged one by one). */
export function answerEffects(match: AccountMatch): { same: string; separate: string } {
  const tx = match.transactions ?? { both: 0, onlyFirst: 0, onlySecond: 0 };
  const [first, second] = [match.first.connectionName, match.second.connectionName];
  const only = `the ${count(tx.onlyFirst)} only ${first} has and the ${count(tx.onlySecond)} only ${second} has stay`;
  if (match.state === 'separate') {
    return {
      same: `Same account: agents see one account, from ${first}; its transactions are matched one by one, each one both report counted once and those only one has kept.`,
      separate: 'Keep separate (current): agents see both accounts and every transaction of each.',
    };
  }
  return {
    same: `Same account${match.state === 'same' ? ' (current)' : ''}: agents see one account, from ${first}; ${count(tx.both)} both report ${tx.both === 1 ? 'counts' : 'count'} once (${first}'s copy), and ${only}.`,
    separate: `Keep separate: agents see both accounts and all ${count(2 * tx.both + tx.onlyFirst + tx.onlySecond)} of the two${match.state === 'open' ? `; the ${count(tx.both, 'pair')} no longer marked as possible duplicates` : `, ${count(tx.both)} of them twice`}.`,
  };
}

function effectsText(match: AccountMatch): HTMLElement {
  const effects = answerEffects(match);
  const pending = match.state === 'open' ? `Until you answer, agents see both accounts, and the ${count(match.transactions?.both ?? 0, 'pair')} of transactions both report are marked as possible duplicates.` : null;
  return h('ul', { class: 'match-effects muted', 'aria-label': 'What each answer changes' }, ...[pending, effects.same, effects.separate].filter((text): text is string => text !== null).map((text) => h('li', {}, text)));
}

function decision(match: AccountMatch): string {
  if (match.automatic) return 'Merged automatically (same last 4)';
  return match.state === 'same' ? 'Same account' : 'Kept separate';
}

/**
 * Finance account deduplication (spec 2.1): the open questions, each with "Same account" and "Keep
 * separate", and the pairs already decided, whose answers can be changed. Every name shown is data
 * from a source, set as text.
 */
export async function renderAccountMatches(root: HTMLElement): Promise<void> {
  const message = h('div', { class: 'messages' });
  const openArea = h('div', { id: 'open-matches' });
  const decidedArea = h('div', { id: 'decided-matches' });
  const say = (text: string, kind: 'ok' | 'error' = 'ok') => replace(message, notice(text, kind));

  async function answer(match: AccountMatch, same: boolean) {
    try {
      await api('POST', `/api/finance/account-matches/${encodeURIComponent(match.id)}`, { same });
      document.dispatchEvent(new Event('console:changed'));
      say(
        same
          ? `${accountName(match.first)} and ${accountName(match.second)} are one account: agents see it once, from ${match.first.connectionName}. Each transaction both report counts once; those only one reports stay.`
          : `${accountName(match.first)} and ${accountName(match.second)} are kept separate.`,
      );
      await list();
    } catch (error) {
      say(errorText(error), 'error');
    }
  }

  function question(match: AccountMatch): HTMLElement {
    const label = `${accountName(match.first)} and ${accountName(match.second)} at ${match.institutionDomain}`;
    return h(
      'article',
      { class: 'card match', 'aria-label': `Same account? ${label}`, 'data-match': match.id },
      h('h4', {}, `Same account at ${match.institutionDomain}?`),
      sideText(match.first),
      sideText(match.second),
      effectsText(match),
      h(
        'div',
        { class: 'acts' },
        button('Same account', () => void answer(match, true), { 'aria-label': `Same account: ${label}` }),
        button('Keep separate', () => void answer(match, false), { 'aria-label': `Keep separate: ${label}` }),
      ),
    );
  }

  function decidedRow(match: AccountMatch) {
    const label = `${accountName(match.first)} and ${accountName(match.second)} at ${match.institutionDomain}`;
    return [
      match.institutionDomain,
      h('div', {}, sideText(match.first), sideText(match.second), match.automatic ? null : effectsText(match)),
      h('span', { class: `match-state ${match.state}`, 'data-match-state': match.state }, decision(match)),
      match.automatic ? h('span', { class: 'muted' }, '—') : time(match.answeredAt),
      match.automatic
        ? null
        : match.state === 'same'
          ? button('Keep separate', () => void answer(match, false), { 'aria-label': `Keep separate: ${label}` })
          : button('Same account', () => void answer(match, true), { 'aria-label': `Same account: ${label}` }),
    ];
  }

  async function list() {
    try {
      const { open, decided } = await api<{ open: AccountMatch[]; decided: AccountMatch[] }>('GET', '/api/finance/account-matches');
      replace(openArea, open.length === 0 ? h('p', { class: 'empty' }, 'No open questions.') : h('div', { class: 'cards' }, ...open.map(question)));
      replace(decidedArea, table('Decided account matches', ['Institution', 'Accounts', 'Decision', 'Answered', ''], decided.map(decidedRow), 'Nothing decided yet.'));
    } catch (error) {
      replace(openArea, notice(errorText(error), 'error'));
      decidedArea.replaceChildren();
    }
  }

  replace(root, h('p', { class: 'hint' }, MATCH_HINT), message, h('h3', {}, 'Open questions'), openArea, h('h3', {}, 'Decided'), decidedArea);
  await list();
}

/** Puts the number of open questions on the screen's link in the navigation, so the operator sees them from any screen. */
export async function showOpenMatchCount(nav: HTMLElement): Promise<void> {
  const link = nav.querySelector<HTMLAnchorElement>('a[href="#account-matches"]');
  if (!link) return;
  try {
    const { open } = await api<{ open: AccountMatch[] }>('GET', '/api/finance/account-matches');
    link.dataset.open = String(open.length);
    link.textContent = open.length === 0 ? 'Account matches' : `Account matches (${open.length} open)`;
  } catch {
    // The screen itself says what went wrong; the link keeps its name.
  }
}
