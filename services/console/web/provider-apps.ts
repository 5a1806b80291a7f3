import { api, errorText } from './api.ts';
import { h, labelled, notice, replace } from './dom.ts';
import { redirectLine } from './oauth.ts';
import type { Provider } from './types.ts';

const stateText = (saved: boolean) =>
  saved ? 'Saved. The client ID and secret are stored encrypted and never shown again; saving new ones replaces them.' : 'Not saved yet: Connect stays off until they are.';

/**
 * One provider's application form: write-only, so it shows whether they are saved and nothing of them.
 * An OAuth provider shows the redirect URI to register; a bank aggregator asks for its environment.
 */
function appForm(provider: Provider): HTMLElement {
  const message = h('div', { class: 'messages' });
  const saved = provider.oauth?.appSaved ?? provider.link?.appSaved ?? false;
  const state = h('p', { class: 'app-state', 'data-app-saved': String(saved) }, stateText(saved));
  const environments = provider.link?.environments ?? [];
  const environment = h('select', { name: 'environment' }, ...environments.map((name) => h('option', { value: name }, name)));
  const clientId = h('input', { type: 'text', name: 'clientId', required: true, maxLength: 1024, autocomplete: 'off', spellcheck: false });
  const clientSecret = h('input', { type: 'password', name: 'clientSecret', required: true, maxLength: 4096, autocomplete: 'new-password' });
  const form = h(
    'form',
    { class: 'settings provider-app', 'aria-label': `${provider.displayName} application`, 'data-provider': provider.kind },
    h('h4', {}, provider.displayName),
    state,
    provider.oauth ? redirectLine(provider) : null,
    labelled('Client ID', clientId),
    labelled('Client secret', clientSecret, 'Stored encrypted; never shown again'),
    provider.link ? labelled('Environment', environment, 'Sandbox for test banks, production for your own') : null,
    h('div', { class: 'form-acts' }, h('button', { type: 'submit' }, `Save ${provider.displayName} application`)),
    message,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void (async () => {
      try {
        await api('PUT', `/api/connect/${encodeURIComponent(provider.kind)}/app`, {
          clientId: clientId.value.trim(),
          clientSecret: clientSecret.value,
          ...(provider.link ? { environment: environment.value } : {}),
        });
        form.reset();
        state.dataset.appSaved = 'true';
        state.textContent = stateText(true);
        replace(message, notice(`Saved ${provider.displayName}'s application credentials.`, 'ok'));
      } catch (error) {
        replace(message, notice(errorText(error), 'error'));
      }
    })();
  });
  return form;
}

/**
 * Provider application credentials (design 7.1): the client ID and secret of the app the operator
 * registered with each OAuth provider. Never served back: the page only learns that they are saved.
 */
export async function renderProviderApps(root: HTMLElement): Promise<void> {
  try {
    const { providers } = await api<{ providers: Provider[] }>('GET', '/api/providers');
    const oauth = providers.filter((provider) => provider.oauth !== null || provider.link !== null);
    replace(
      root,
      h('h3', {}, 'Provider applications'),
      h('p', { class: 'hint' }, 'A provider you sign in to needs an app of yours registered with it: register the redirect URI shown, then save its client ID and secret here.'),
      ...(oauth.length === 0 ? [h('p', { class: 'empty' }, 'No provider signs in through an app of yours.')] : oauth.map(appForm)),
    );
  } catch (error) {
    replace(root, notice(errorText(error), 'error'));
  }
}
