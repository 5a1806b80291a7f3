import { api, errorText } from './api.ts';
import { h, notice, replace, table, time } from './dom.ts';
import { signInLink } from './oauth.ts';
import type { SignIn } from './types.ts';

const account = (signIn: SignIn) => signIn.accountId ?? (signIn.signIn === 'token' ? 'pasted token' : 'unknown account');

function row(signIn: SignIn) {
  return [
    account(signIn),
    h('span', { class: `state ${signIn.status}` }, signIn.status.replaceAll('_', ' ')),
    signIn.connections.length === 0
      ? h('span', { class: 'muted' }, 'none')
      : h('ul', { class: 'plain' }, ...signIn.connections.map((connection) => h('li', {}, `${connection.displayName} · ${connection.sector} (${connection.status.replaceAll('_', ' ')})`))),
    signIn.grantedScopes.length === 0 ? h('span', { class: 'muted' }, '—') : signIn.grantedScopes.join(' '),
    time(signIn.lastRefreshedAt, 'never'),
    signIn.lastError ? h('span', { class: 'error-text' }, signIn.lastError) : h('span', { class: 'muted' }, 'none'),
    signIn.signIn === 'oauth' ? signInLink('Sign in again', signIn.provider, `Sign in again to ${signIn.providerName} as ${account(signIn)}`, signIn.id) : null,
    signIn.signIn === 'link' ? signInLink('Repair the bank login', signIn.provider, `Repair the bank login of ${signIn.providerName} item ${account(signIn)}`, signIn.id) : null,
  ];
}

/** One list of sign-ins per provider (design 7.1): the connections each holds, its status and its last refresh. */
export async function renderSignIns(root: HTMLElement): Promise<void> {
  try {
    const { signIns } = await api<{ signIns: SignIn[] }>('GET', '/api/sign-ins');
    if (signIns.length === 0) return replace(root, h('p', { class: 'empty' }, 'No sign-ins yet.'));
    const providers = [...new Set(signIns.map((signIn) => signIn.provider))];
    replace(
      root,
      ...providers.map((provider) => {
        const mine = signIns.filter((signIn) => signIn.provider === provider);
        const name = mine[0]?.providerName ?? provider;
        return h(
          'section',
          { class: 'sign-ins', 'aria-label': `Sign-ins to ${name}`, 'data-provider': provider },
          h('h4', {}, name),
          table(`Sign-ins to ${name}`, ['Account', 'Status', 'Connections', 'Granted scopes', 'Last refresh', 'Last error', ''], mine.map(row), 'No sign-ins.'),
        );
      }),
    );
  } catch (error) {
    replace(root, notice(errorText(error), 'error'));
  }
}
