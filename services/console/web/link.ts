import { h } from './dom.ts';
import { signInLink } from './oauth.ts';
import type { Provider } from './types.ts';

/**
 * A bank aggregator's connect form (a `link` provider): the bank is linked at the aggregator's hosted
 * page, which sends the browser back to the Console; each linked bank becomes one finance connection.
 * The application (client ID, secret, environment) is saved in Settings first.
 */
export function linkConnectParts(provider: Provider): HTMLElement[] {
  const link = provider.link;
  if (!link) return [h('p', { class: 'hint' }, `${provider.displayName} has no hosted link.`)];
  return [
    h('p', { class: 'hint' }, `Opens ${provider.displayName}'s hosted page, where you choose your bank and log in to it there; the gateway never sees that login. Each bank you link becomes one finance connection.`),
    h(
      'p',
      { class: 'app-state', 'data-app-saved': String(link.appSaved) },
      'Application credentials: ',
      link.appSaved ? h('strong', {}, 'saved') : h('strong', {}, 'not saved'),
      link.appSaved ? ' (change them in ' : ' — save the client ID, secret and environment of your app at the aggregator in ',
      h('a', { href: '#settings' }, 'Settings'),
      link.appSaved ? ').' : ' first.',
    ),
    link.appSaved
      ? signInLink(`Link a bank with ${provider.displayName}`, provider.kind, `Link a bank with ${provider.displayName}`)
      : h('button', { type: 'button', disabled: true, 'aria-label': `Link a bank with ${provider.displayName}` }, `Link a bank with ${provider.displayName}`),
  ];
}
