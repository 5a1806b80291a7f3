import { api } from './api.ts';
import { h } from './dom.ts';
import type { Agent, Connection } from './types.ts';

/**
 * The first run (issue 40): where the Console is empty, the way through it — connect a source, create an
 * agent, copy the snippet for the client — with each step's place linked and the finished ones marked, and
 * what `npm run demo` does for someone who wants to try it with made-up data first.
 */
export async function firstRunGuide(): Promise<HTMLElement> {
  const [connections, agents] = await Promise.all([
    api<{ connections: Connection[] }>('GET', '/api/connections').then((answer) => answer.connections.length, () => 0),
    api<Agent[]>('GET', '/api/agents').then((answer) => answer.length, () => 0),
  ]);
  const step = (done: boolean, ...content: Array<Node | string>) => h('li', { class: done ? 'done' : null }, ...content, done ? h('span', { class: 'step-done' }, ' (done)') : null);
  return h(
    'section',
    { class: 'first-run', 'aria-labelledby': 'first-run-title' },
    h('h3', { id: 'first-run-title' }, 'Getting started'),
    h(
      'ol',
      {},
      step(connections > 0, 'Connect a source: your home hub, calendar, mail, bank or phone. ', h('a', { href: '#connections?add' }, 'Add a source'), ' and pick its kind; the Console checks it and syncs it.'),
      step(agents > 0, 'Create an agent: give it a name and the sectors it may read, and copy its key when it is shown (only once). ', h('a', { href: '#agents' }, 'Create an agent')),
      step(false, 'Copy the snippet for your client: in the Connect band at the top, open the snippets, copy the one for your client (Claude Code, an mcp.json, or the TypeScript SDK) and put the agent’s key where it says <agent key>.'),
    ),
    h(
      'p',
      { class: 'hint' },
      'To try it with made-up data first: with the gateway running, run ',
      h('code', {}, 'npm run demo'),
      ' in another terminal. It starts a demo hub (a stand-in for Home Assistant) and a demo phone that pushes health data, connects both here, and shows a sync, a live read, an action, a refused action and a push; it pauses them when you stop it, and ',
      h('code', {}, 'npm run demo -- --remove'),
      ' takes them and their data away.',
    ),
  );
}
