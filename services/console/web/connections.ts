import { api, errorText } from './api.ts';
import { button, copyButton, h, labelled, notice, replace, time, uid } from './dom.ts';
import { linkConnectParts } from './link.ts';
import { oauthConnectParts, signInLink } from './oauth.ts';
import { claimForm } from './claim-form.ts';
import { credentialsOf } from './credential-values.ts';
import { credentialFields } from './provider-forms.ts';
import { renderSignIns } from './sign-ins.ts';
import type { Connection, Provider } from './types.ts';

type WithSecret = { connection: Connection; ingestSecret?: string; warning?: string };

const changed = () => document.dispatchEvent(new Event('console:changed'));

export function age(iso: string | null): string {
  if (!iso) return 'no data yet';
  const seconds = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  if (seconds < 90) return `${seconds} s old`;
  if (seconds < 90 * 60) return `${Math.round(seconds / 60)} min old`;
  if (seconds < 36 * 3600) return `${Math.round(seconds / 3600)} h old`;
  return `${Math.round(seconds / 86400)} days old`;
}

/** The push address and its secret, shown once (spec 2.4). */
function secretPanel(connection: Connection, secret: string): HTMLElement {
  const url = `${location.origin}${connection.ingestPath ?? ''}`;
  return h(
    'section',
    { class: 'key-panel', 'aria-label': `Push secret for ${connection.displayName}` },
    h('h3', {}, `Push settings for ${connection.displayName}`),
    notice('Copy the secret now: it will not be shown again. Rotating it makes a new one and stops the old.', 'warning'),
    h('div', { class: 'url-line' }, h('span', { class: 'url-label' }, 'Push URL'), h('code', { class: 'url', id: 'push-url' }, url), copyButton(() => url)),
    h('div', { class: 'url-line' }, h('span', { class: 'url-label' }, 'Secret'), h('code', { class: 'key', id: 'push-secret' }, secret), copyButton(() => secret, 'Copy secret')),
    h('p', { class: 'hint' }, 'Send it as "Authorization: Bearer <secret>" or in the header X-PCI-Webhook-Secret. The device must be able to reach this address.'),
  );
}

/**
 * The connect form of one provider, chosen by its sign-in kind and built from its descriptor: a token
 * provider's fields come from its credentials schema, so a new provider of a known kind needs no page code.
 */
function connectForm(provider: Provider, done: (answer: WithSecret) => Promise<void>, say: (text: string, kind?: 'ok' | 'error' | 'warning') => void, claimed: () => Promise<void>): HTMLElement {
  if (provider.signIn === 'token' && provider.claim) return claimForm(provider, claimed);
  const displayName = h('input', { type: 'text', name: 'displayName', maxLength: 200, placeholder: provider.displayName, autocomplete: 'off' });
  const about = h('p', { class: 'hint' }, `Fills ${provider.sectors.join(', ')}: ${provider.objects.join(', ')}.`);
  const heading = h('h3', {}, provider.displayName);
  const submit = async (body: Record<string, unknown>) => {
    try {
      const answer = await api<WithSecret>('POST', '/api/connections', body);
      await done(answer);
      say(answer.warning ?? `Connected ${answer.connection.displayName}.`, answer.warning ? 'warning' : 'ok');
    } catch (error) {
      say(errorText(error), 'error');
    }
  };
  const form = h('form', { class: 'connect', 'aria-label': `Connect ${provider.displayName}`, 'data-provider': provider.kind });
  const named = () => (displayName.value.trim() ? { displayName: displayName.value.trim() } : {});
  if (provider.signIn === 'token') {
    const fields = credentialFields(provider.credentials);
    const interval = h('input', { type: 'number', name: 'syncIntervalMinutes', min: 1, max: 10080, value: String(provider.defaultSyncIntervalMinutes ?? 60) });
    replace(form, heading, about, ...fields.map((field) => field.element), labelled('Name in the Console', displayName), labelled('Sync every (minutes)', interval), h('button', { type: 'submit' }, `Connect ${provider.displayName}`));
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const credentials = credentialsOf(fields);
      void submit({ provider: provider.kind, ...named(), syncIntervalMinutes: Number(interval.value), credentials }).then(() => form.reset());
    });
  } else if (provider.signIn === 'push') {
    replace(form, heading, about, h('p', { class: 'hint' }, 'The device pushes its data to the gateway; you get a push URL and a secret.'), labelled('Name in the Console', displayName), h('button', { type: 'submit' }, `Add ${provider.displayName}`));
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      void submit({ provider: provider.kind, ...named() }).then(() => form.reset());
    });
  } else if (provider.signIn === 'oauth') {
    replace(form, heading, about, ...oauthConnectParts(provider));
  } else if (provider.signIn === 'link') {
    replace(form, heading, about, ...linkConnectParts(provider));
  } else {
    replace(form, heading, about, h('p', { class: 'hint' }, `Signing in to ${provider.displayName} (${provider.signIn}) is not offered by this Console yet.`));
  }
  return form;
}

/**
 * New credentials for a token provider's sign-in, from its schema like the connect form (every connection of
 * the sign-in uses them): how an iCloud connection gets the iCloud Mail address it was refused without.
 */
function credentialsForm(connection: Connection, provider: Provider, save: (credentials: Record<string, string>) => void, cancel: () => void): HTMLElement {
  const fields = credentialFields(provider.credentials);
  const form = h(
    'form',
    { class: 'connect', 'aria-label': `Credentials of ${connection.displayName}` },
    ...fields.map((field) => field.element),
    h('button', { type: 'submit' }, 'Save credentials'),
    button('Cancel', cancel),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    save(credentialsOf(fields));
  });
  return form;
}

export async function renderConnections(root: HTMLElement): Promise<void> {
  const message = h('div', { class: 'messages' });
  const secretArea = h('div');
  const listArea = h('div');
  const signInsArea = h('div', { id: 'sign-ins' });
  const say = (text: string, kind: 'ok' | 'error' | 'warning' = 'ok') => replace(message, notice(text, kind));

  async function act(work: () => Promise<unknown>, done: string) {
    try {
      const answer = (await work()) as { warning?: string } | undefined;
      say(answer?.warning ?? done, answer?.warning ? 'warning' : 'ok');
      changed();
      await list();
    } catch (error) {
      say(errorText(error), 'error');
    }
  }

  function card(connection: Connection, providers: Provider[]): HTMLElement {
    const path = `/api/connections/${connection.id}`;
    const provider = providers.find((candidate) => candidate.kind === connection.provider);
    const holder = h('div', { class: 'row-panel' });
    const pull = connection.signIn !== 'push';
    const interval = h('input', { id: uid('interval'), type: 'number', min: 1, max: 10080, value: String(connection.syncIntervalMinutes ?? ''), 'aria-label': `Sync interval of ${connection.displayName} in minutes` });
    const intervalForm = h('form', { class: 'inline' }, h('label', { htmlFor: interval.id }, 'Sync every'), interval, ' min ', h('button', { type: 'submit' }, 'Save interval'));
    intervalForm.addEventListener('submit', (event) => {
      event.preventDefault();
      void act(() => api('PATCH', path, { syncIntervalMinutes: Number(interval.value) }), `Sync interval of ${connection.displayName} saved.`);
    });
    const paused = connection.status === 'paused';
    const removes = provider ? `${provider.objects.join(', ')} cached from it` : 'everything cached from it';
    const acts = h(
      'div',
      { class: 'acts' },
      pull ? button('Sync now', () => void act(() => api('POST', `${path}/sync`), `Sync of ${connection.displayName} queued.`), { 'aria-label': `Sync ${connection.displayName} now` }) : null,
      button(paused ? 'Resume' : 'Pause', () => void act(() => api('POST', `${path}/${paused ? 'resume' : 'pause'}`), `${connection.displayName} ${paused ? 'resumed' : 'paused'}.`), {
        'aria-label': `${paused ? 'Resume' : 'Pause'} ${connection.displayName}`,
      }),
      connection.signIn === 'oauth' && connection.status === 'needs_sign_in' && connection.signInId
        ? signInLink('Sign in again', connection.provider, `Sign in again for ${connection.displayName} (${connection.sector})`, connection.signInId)
        : null,
      connection.signIn === 'link' && connection.status === 'needs_sign_in' && connection.signInId
        ? signInLink('Repair the bank login', connection.provider, `Repair the bank login of ${connection.displayName}`, connection.signInId)
        : null,
      provider?.signIn === 'token' && provider.credentials && !provider.claim
        ? button('Enter credentials again', () => replace(holder, credentialsForm(connection, provider, (credentials) => void act(() => api('PATCH', path, { credentials }), `Credentials of ${connection.displayName} replaced; it syncs again.`), () => holder.replaceChildren())), {
            'aria-label': `Enter the credentials of ${connection.displayName} again`,
          })
        : null,
      connection.signIn === 'push'
        ? button('Rotate secret', () =>
            void act(async () => {
              const answer = await api<WithSecret>('POST', `${path}/rotate-secret`);
              if (answer.ingestSecret) secretArea.replaceChildren(secretPanel(answer.connection, answer.ingestSecret));
            }, `New push secret for ${connection.displayName}; the old one no longer works.`), { 'aria-label': `Rotate the push secret of ${connection.displayName}` })
        : null,
      button(
        'Remove',
        () =>
          replace(
            holder,
            h(
              'div',
              { class: 'confirm', role: 'group', 'aria-label': `Remove ${connection.displayName}` },
              h('p', {}, `Remove ${connection.displayName}? This deletes the connection and the ${removes} (sector ${connection.sector}). The ledger keeps its rows.`),
              button('Yes, remove', () => void act(() => api('DELETE', path), `Removed ${connection.displayName}.`), { class: 'danger' }),
              button('Cancel', () => holder.replaceChildren()),
            ),
          ),
        { class: 'danger', 'aria-label': `Remove ${connection.displayName}` },
      ),
    );
    return h(
      'article',
      { class: 'card', 'aria-label': connection.displayName, 'data-connection': connection.id },
      h('h4', {}, connection.displayName, h('span', { class: 'muted' }, ` · ${connection.providerName} · ${connection.sector}`)),
      h(
        'dl',
        { class: 'facts' },
        h('dt', {}, 'Status'),
        h('dd', {}, h('span', { class: `state ${connection.status}` }, connection.status.replaceAll('_', ' '))),
        h('dt', {}, 'Health'),
        h('dd', {}, h('span', { class: `health ${connection.health}` }, connection.health)),
        h('dt', {}, connection.signIn === 'push' ? 'Last push' : 'Last sync'),
        h('dd', {}, time(connection.lastSyncedAt, 'never'), ` (${age(connection.lastSyncedAt)})`),
        h('dt', {}, 'Last error'),
        h('dd', { class: connection.lastError ? 'error-text' : 'muted' }, connection.lastError ?? 'none'),
        connection.consentExpiresAt ? h('dt', {}, 'Bank consent expires') : null,
        connection.consentExpiresAt ? h('dd', { 'data-consent-expires': connection.consentExpiresAt }, time(connection.consentExpiresAt, 'never')) : null,
        connection.ingestPath ? h('dt', {}, 'Push URL') : null,
        connection.ingestPath ? h('dd', {}, h('code', {}, `${location.origin}${connection.ingestPath}`), connection.hasIngestSecret ? '' : ' (no secret set)') : null,
      ),
      pull ? intervalForm : null,
      acts,
      holder,
    );
  }

  async function list(providers?: Provider[]) {
    try {
      const known = providers ?? cachedProviders;
      const { connections } = await api<{ connections: Connection[] }>('GET', '/api/connections');
      replace(listArea, connections.length === 0 ? h('p', { class: 'empty' }, 'No connections yet.') : h('div', { class: 'cards' }, ...connections.map((connection) => card(connection, known))));
    } catch (error) {
      replace(listArea, notice(errorText(error), 'error'));
    }
    await renderSignIns(signInsArea);
  }

  let cachedProviders: Provider[] = [];
  try {
    cachedProviders = (await api<{ providers: Provider[] }>('GET', '/api/providers')).providers;
  } catch (error) {
    replace(root, notice(errorText(error), 'error'));
    return;
  }
  const forms = cachedProviders.map((provider) =>
    connectForm(
      provider,
      async (answer) => {
        secretArea.replaceChildren();
        if (answer.ingestSecret) secretArea.replaceChildren(secretPanel(answer.connection, answer.ingestSecret));
        changed();
        await list();
      },
      say,
      async () => {
        changed();
        await list();
      },
    ),
  );
  replace(
    root,
    h('h3', {}, 'Connected'),
    message,
    secretArea,
    listArea,
    h('h3', {}, 'Sign-ins'),
    h('p', { class: 'hint' }, 'Each sign-in holds one grant at a provider; its connections (one per sector) share it.'),
    signInsArea,
    h('h3', {}, 'Connect a source'),
    h('div', { class: 'connect-forms' }, ...forms),
  );
  await list(cachedProviders);
}
