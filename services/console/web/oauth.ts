import { copyButton, h } from './dom.ts';
import type { Provider } from './types.ts';

/** Where the sign-in starts: a top-level navigation, since the provider's page must open in this tab. */
export const startPath = (provider: string, signInId?: string) => `/api/connect/${encodeURIComponent(provider)}/start${signInId ? `?signInId=${encodeURIComponent(signInId)}` : ''}`;

/** The address the provider sends the browser back to: the Console's own origin and the callback path. */
export const redirectUri = (provider: Provider) => `${location.origin}${provider.oauth?.callbackPath ?? ''}`;

/** A link that starts a sign-in (or renews `signInId`); the provider's page then redirects back here. */
export function signInLink(text: string, provider: string, label: string, signInId?: string): HTMLAnchorElement {
  return h('a', { class: 'button', href: startPath(provider, signInId), 'aria-label': label }, text);
}

/** The redirect URI the operator registers with the provider, with a copy button. */
export function redirectLine(provider: Provider): HTMLElement {
  const uri = redirectUri(provider);
  return h('div', { class: 'url-line' }, h('span', { class: 'url-label' }, 'Redirect URI'), h('code', { class: 'url', 'data-redirect-uri': provider.kind }, uri), copyButton(() => uri, 'Copy redirect URI'));
}

/**
 * An OAuth provider's connect form (design 7.1): what it asks for, whether its application credentials
 * are saved (they are typed in Settings, never shown back), the redirect URI to register, and Connect.
 */
export function oauthConnectParts(provider: Provider): HTMLElement[] {
  const oauth = provider.oauth;
  if (!oauth) return [h('p', { class: 'hint' }, `${provider.displayName} has no sign-in address.`)];
  return [
    h('p', { class: 'hint' }, `Asks ${provider.displayName} for ${oauth.scopes.join(', ')}. Each sector the granted scopes cover becomes one connection; the provider may grant fewer than asked.`),
    h(
      'p',
      { class: 'app-state', 'data-app-saved': String(oauth.appSaved) },
      'Application credentials: ',
      oauth.appSaved ? h('strong', {}, 'saved') : h('strong', {}, 'not saved'),
      oauth.appSaved ? ' (change them in ' : ' — save the client ID and secret of your app at the provider in ',
      h('a', { href: '#settings' }, 'Settings'),
      oauth.appSaved ? ').' : ' first.',
    ),
    redirectLine(provider),
    h('p', { class: 'hint' }, `Register this redirect URI with ${provider.displayName} exactly; open the Console at the same address when you connect.`),
    oauth.appSaved
      ? signInLink(`Connect ${provider.displayName}`, provider.kind, `Connect ${provider.displayName}`)
      : h('button', { type: 'button', disabled: true, 'aria-label': `Connect ${provider.displayName}` }, `Connect ${provider.displayName}`),
  ];
}
