import { firstRunGuide } from './first-run.ts';
import { api, errorText } from './api.ts';
import { button, copyButton, h, isolated, labelled, notice, replace, time, uid } from './dom.ts';
import { linkConnectParts } from './link.ts';
import { oauthConnectParts, signInLink } from './oauth.ts';
import { claimForm } from './claim-form.ts';
import { credentialsOf } from './credential-values.ts';
import { cardHref } from './connection-links.ts';
import { formErrors } from './form-errors.ts';
import { credentialFields } from './provider-forms.ts';
import type { Connection, Provider, SignIn } from './types.ts';

type WithSecret = { connection: Connection; ingestSecret?: string; warning?: string };
/** The answer of `POST /api/connections/:id/check`. */
type CheckAnswer = { ok: boolean; steps: Array<{ step: string; title: string; passed: boolean; message: string }>; requests: number };

const changed = () => document.dispatchEvent(new Event('console:changed'));

export function age(iso: string | null): string {
  if (!iso) return 'no data yet';
  const seconds = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
  if (seconds < 90) return `${seconds} s old`;
  if (seconds < 90 * 60) return `${Math.round(seconds / 60)} min old`;
  if (seconds < 36 * 3600) return `${Math.round(seconds / 3600)} h old`;
  return `${Math.round(seconds / 86400)} days old`;
}

/** What the Connections screen's address asks for: the list, the catalogue (`?add`), one provider's form (`?add=kind`), or a card (`?card=id`). */
function view(): { add: string | null; card: string | null } {
  const query = new URLSearchParams(location.hash.split('?')[1] ?? '');
  return { add: query.has('add') ? (query.get('add') ?? '') : null, card: query.get('card') };
}

/** Said once on the list after an act on another view: a created connection's message and push secret. */
let carried: { text: string; kind: 'ok' | 'warning'; secret?: { connection: Connection; value: string } } | null = null;

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

/** After a connection is made: back to the list, at its card, with the message (and a push secret) carried over. */
function returnToCard(connection: Connection, text: string, kind: 'ok' | 'warning', secret?: string): void {
  carried = { text, kind, ...(secret ? { secret: { connection, value: secret } } : {}) };
  changed();
  // Replaces the form's entry: Back from the card goes to where the operator was before adding.
  location.replace(cardHref(connection.id));
}

/**
 * The connect form of one provider, chosen by its sign-in kind and built from its descriptor: a token
 * provider's fields come from its credentials schema, so a new provider of a known kind needs no page code.
 * A refusal is shown beside the field it names and every value stays.
 */
function connectForm(provider: Provider): HTMLElement {
  if (provider.signIn === 'token' && provider.claim) {
    return claimForm(provider, async (connections, text) => {
      const [first] = connections;
      if (first) returnToCard(first, text, 'ok');
    });
  }
  const displayName = h('input', { type: 'text', name: 'displayName', maxLength: 200, placeholder: provider.displayName, autocomplete: 'off' });
  const about = h('p', { class: 'hint' }, `Fills ${provider.sectors.join(', ')}: ${provider.objects.join(', ')}.`);
  const heading = h('h3', {}, provider.displayName);
  const general = h('div', { class: 'messages', 'aria-live': 'polite' });
  const form = h('form', { class: 'connect', 'aria-label': `Connect ${provider.displayName}`, 'data-provider': provider.kind });
  const errors = formErrors(form, general);
  const named = () => (displayName.value.trim() ? { displayName: displayName.value.trim() } : {});
  const submit = async (body: Record<string, unknown>, submitButton: HTMLButtonElement) => {
    submitButton.disabled = true;
    try {
      const answer = await api<WithSecret>('POST', '/api/connections', body);
      returnToCard(answer.connection, answer.warning ?? `Connected ${answer.connection.displayName}.`, answer.warning ? 'warning' : 'ok', answer.ingestSecret);
    } catch (error) {
      errors.show(errorText(error));
    } finally {
      submitButton.disabled = false;
    }
  };
  if (provider.signIn === 'token') {
    const fields = credentialFields(provider.credentials);
    const interval = h('input', { type: 'number', name: 'syncIntervalMinutes', min: 1, max: 10080, required: true, value: String(provider.defaultSyncIntervalMinutes ?? 60) });
    const send = h('button', { type: 'submit' }, `Connect ${provider.displayName}`);
    replace(form, heading, about, general, ...fields.map((field) => field.element), labelled('Name in the Console', displayName), labelled('Sync every (minutes)', interval), send);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      if (!errors.checkInBrowser()) return;
      void submit({ provider: provider.kind, ...named(), syncIntervalMinutes: Number(interval.value), credentials: credentialsOf(fields) }, send);
    });
  } else if (provider.signIn === 'push') {
    const send = h('button', { type: 'submit' }, `Add ${provider.displayName}`);
    replace(form, heading, about, general, h('p', { class: 'hint' }, 'The device pushes its data to the gateway; you get a push URL and a secret.'), labelled('Name in the Console', displayName), send);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      if (!errors.checkInBrowser()) return;
      void submit({ provider: provider.kind, ...named() }, send);
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

const SIGN_IN_WORDS: Record<string, string> = {
  token: 'you paste a token or password',
  push: 'the device pushes to a URL with a secret',
  oauth: 'you sign in at the provider',
  link: 'you link your bank at the aggregator',
};

/** Add a source, step 1: the providers as a catalogue, from their descriptors. */
function catalogue(providers: Provider[]): HTMLElement {
  return h(
    'section',
    { class: 'add-source', 'aria-labelledby': 'add-source-title' },
    h('h3', { id: 'add-source-title', tabIndex: -1 }, 'Add a source: choose its kind'),
    h('p', {}, h('a', { href: '#connections' }, '← Back to the connections')),
    h(
      'ul',
      { class: 'catalogue' },
      ...providers.map((provider) =>
        h(
          'li',
          {},
          h(
            'a',
            { class: 'provider-tile', href: `#connections?add=${encodeURIComponent(provider.kind)}`, 'data-provider': provider.kind },
            h('strong', {}, provider.displayName),
            h('span', { class: 'hint' }, `${provider.sectors.join(', ')} · ${provider.claim ? 'you paste a setup token from the bridge' : (SIGN_IN_WORDS[provider.signIn] ?? provider.signIn)}`),
          ),
        ),
      ),
    ),
  );
}

/** Add a source, step 2: that provider's form alone. */
function providerView(provider: Provider | undefined, kind: string): HTMLElement {
  return h(
    'section',
    { class: 'add-source', 'aria-labelledby': 'add-source-title' },
    h('h3', { id: 'add-source-title', tabIndex: -1 }, provider ? `Add a source: ${provider.displayName}` : 'Add a source'),
    h('p', {}, h('a', { href: '#connections?add' }, '← Other kinds of source'), ' · ', h('a', { href: '#connections' }, 'Back to the connections')),
    provider ? connectForm(provider) : notice(`No provider is called ${kind}.`, 'error'),
  );
}

/**
 * New credentials for a token provider's sign-in, from its schema like the connect form (every connection of
 * the sign-in uses them): how a refused token is replaced, and how iCloud gets the iCloud Mail address.
 */
function credentialsForm(connection: Connection, provider: Provider, save: (credentials: Record<string, string>) => Promise<string | null>, cancel: () => void): HTMLElement {
  const fields = credentialFields(provider.credentials);
  const general = h('div', { class: 'messages', 'aria-live': 'polite' });
  const form = h(
    'form',
    { class: 'connect', 'aria-label': `Credentials of ${connection.displayName}` },
    h('p', { class: 'hint' }, 'Every connection of this sign-in uses them; the old ones are replaced, and a connection that needed them syncs again.'),
    general,
    ...fields.map((field) => field.element),
    h('button', { type: 'submit' }, 'Save credentials'),
    button('Cancel', cancel),
  );
  const errors = formErrors(form, general);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (!errors.checkInBrowser()) return;
    void save(credentialsOf(fields)).then((refusal) => refusal && errors.show(refusal));
  });
  return form;
}

function nextSync(connection: Connection): HTMLElement | string {
  if (connection.signIn === 'push') return 'when the device pushes';
  if (connection.status === 'paused') return 'paused';
  if (connection.status === 'needs_sign_in') return 'after you sign in again';
  if (!connection.syncIntervalMinutes) return '—';
  if (!connection.lastSyncedAt) return 'soon (the first sync is queued)';
  const next = Date.parse(connection.lastSyncedAt) + connection.syncIntervalMinutes * 60_000;
  return next <= Date.now() ? 'due now' : time(new Date(next).toISOString());
}

function checkResult(connection: Connection, answer: CheckAnswer): HTMLElement {
  return h(
    'section',
    { class: `check-result ${answer.ok ? 'passed' : 'failed'}`, 'aria-label': `Check of ${connection.displayName}` },
    h('p', { class: 'check-summary' }, answer.ok ? `Every step passed (${answer.requests} request${answer.requests === 1 ? '' : 's'} to the source).` : `A step failed (${answer.requests} request${answer.requests === 1 ? '' : 's'} to the source).`),
    h(
      'ol',
      { class: 'steps' },
      ...answer.steps.map((step) =>
        h('li', { class: `step ${step.passed ? 'passed' : 'failed'}`, 'data-step': step.step }, h('span', { class: 'step-mark' }, step.passed ? '✓ passed' : '✗ failed'), ' ', h('strong', {}, step.title), step.message ? `: ${step.message}` : ''),
      ),
    ),
  );
}

export async function renderConnections(root: HTMLElement): Promise<void> {
  let providers: Provider[];
  try {
    providers = (await api<{ providers: Provider[] }>('GET', '/api/providers')).providers;
  } catch (error) {
    replace(root, notice(errorText(error), 'error'));
    return;
  }
  const { add, card: wanted } = view();
  if (add !== null) {
    const shown = add === '' ? catalogue(providers) : providerView(providers.find((provider) => provider.kind === add), add);
    replace(root, shown);
    shown.querySelector<HTMLElement>('#add-source-title')?.focus();
    return;
  }

  const message = h('div', { class: 'messages' });
  const secretArea = h('div');
  const listArea = h('div', { id: 'connection-list' });
  const say = (text: string, kind: 'ok' | 'error' | 'warning' = 'ok') => replace(message, notice(text, kind));
  if (carried) {
    say(carried.text, carried.kind);
    if (carried.secret) secretArea.replaceChildren(secretPanel(carried.secret.connection, carried.secret.value));
    carried = null;
  }

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

  /** `inSignIn`: the card sits under its sign-in's heading, which already names the provider (named once). */
  function card(connection: Connection, inSignIn = false): HTMLElement {
    const path = `/api/connections/${connection.id}`;
    const provider = providers.find((candidate) => candidate.kind === connection.provider);
    const holder = h('div', { class: 'row-panel' });
    const pull = connection.signIn !== 'push';
    const needsPerson = connection.status === 'needs_sign_in';
    const interval = h('input', { id: uid('interval'), type: 'number', min: 1, max: 10080, value: String(connection.syncIntervalMinutes ?? ''), 'aria-label': `Sync interval of ${connection.displayName} in minutes` });
    const intervalForm = h('form', { class: 'inline' }, h('label', { htmlFor: interval.id }, 'Sync every'), interval, ' min ', h('button', { type: 'submit' }, 'Save interval'));
    intervalForm.addEventListener('submit', (event) => {
      event.preventDefault();
      void act(() => api('PATCH', path, { syncIntervalMinutes: Number(interval.value) }), `Sync interval of ${connection.displayName} saved.`);
    });
    const paused = connection.status === 'paused';
    const removes = provider ? `${provider.objects.join(', ')} cached from it` : 'everything cached from it';
    const replacesToken = provider?.signIn === 'token' && provider.credentials !== null && !provider.claim && connection.signInId !== null;
    const replaceToken = () =>
      replace(
        holder,
        credentialsForm(
          connection,
          provider as Provider,
          async (credentials) => {
            try {
              await api('PATCH', path, { credentials });
            } catch (error) {
              return errorText(error);
            }
            await act(async () => undefined, `Credentials of ${connection.displayName} replaced; it syncs again.`);
            return null;
          },
          () => holder.replaceChildren(),
        ),
      );
    const check = async (checkButton: HTMLButtonElement) => {
      checkButton.disabled = true;
      replace(holder, notice(`Checking ${connection.displayName} against its source…`, 'info'));
      try {
        replace(holder, checkResult(connection, await api<CheckAnswer>('POST', `${path}/check`)));
      } catch (error) {
        replace(holder, notice(errorText(error), 'error'));
      } finally {
        checkButton.disabled = false;
      }
    };
    const acts = h(
      'div',
      { class: 'acts' },
      pull && !paused && !needsPerson ? button('Sync now', () => void act(() => api('POST', `${path}/sync`), `Sync of ${connection.displayName} queued.`), { 'aria-label': `Sync now: ${connection.displayName}` }) : null,
      needsPerson
        ? null
        : button(paused ? 'Resume' : 'Pause', () => void act(() => api('POST', `${path}/${paused ? 'resume' : 'pause'}`), `${connection.displayName} ${paused ? 'resumed' : 'paused'}.`), {
            'aria-label': `${paused ? 'Resume' : 'Pause'} ${connection.displayName}`,
          }),
      connection.signIn === 'oauth' && needsPerson && connection.signInId
        ? signInLink('Sign in again', connection.provider, `Sign in again for ${connection.displayName} (${connection.sector})`, connection.signInId)
        : null,
      connection.signIn === 'link' && needsPerson && connection.signInId
        ? signInLink('Repair the bank login', connection.provider, `Repair the bank login of ${connection.displayName}`, connection.signInId)
        : null,
      replacesToken
        ? button(needsPerson ? 'Replace the token' : 'Replace the token or password', replaceToken, {
            'aria-label': `${needsPerson ? 'Replace the token' : 'Replace the token or password'}: ${connection.displayName}`,
            class: needsPerson ? 'primary' : null,
          })
        : null,
      provider ? button('Check', (event) => void check(event.currentTarget as HTMLButtonElement), { 'aria-label': `Check ${connection.displayName} against its source` }) : null,
      connection.signIn === 'push'
        ? button('Rotate secret', () =>
            void act(async () => {
              const answer = await api<WithSecret>('POST', `${path}/rotate-secret`);
              if (answer.ingestSecret) secretArea.replaceChildren(secretPanel(answer.connection, answer.ingestSecret));
            }, `New push secret for ${connection.displayName}; the old one no longer works.`), { 'aria-label': `Rotate secret: ${connection.displayName}` })
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
      { class: `card${needsPerson ? ' needs-person' : ''}`, 'aria-label': connection.displayName, 'data-connection': connection.id, tabIndex: -1 },
      h('h4', {}, isolated(connection.displayName), h('span', { class: 'muted' }, inSignIn ? ` · ${connection.sector}` : ` · ${connection.providerName} · ${connection.sector}`)),
      needsPerson ? notice(replacesToken ? 'Its token or password was refused: replace it below.' : 'Its sign-in was refused: sign in again below.', 'warning') : null,
      h(
        'dl',
        { class: 'facts' },
        h('dt', {}, 'Status'),
        h('dd', {}, h('span', { class: `state ${connection.status}` }, connection.status.replaceAll('_', ' '))),
        h('dt', {}, 'Health'),
        h('dd', {}, h('span', { class: `health ${connection.health}` }, connection.health.replaceAll('_', ' '))),
        h('dt', {}, connection.signIn === 'push' ? 'Last push' : 'Last sync'),
        h('dd', {}, time(connection.lastSyncedAt, 'never'), ` (${age(connection.lastSyncedAt)})`),
        h('dt', {}, 'Next sync'),
        h('dd', { 'data-next-sync': '' }, nextSync(connection)),
        h('dt', {}, 'Last error'),
        h('dd', { class: connection.lastError ? 'error-text' : 'muted' }, connection.lastError ? isolated(connection.lastError) : 'none'),
        connection.consentExpiresAt ? h('dt', {}, 'Bank consent expires') : null,
        connection.consentExpiresAt ? h('dd', { 'data-consent-expires': connection.consentExpiresAt }, time(connection.consentExpiresAt, 'never')) : null,
        connection.ingestPath ? h('dt', {}, 'Push URL') : null,
        connection.ingestPath ? h('dd', {}, h('code', {}, `${location.origin}${connection.ingestPath}`), connection.hasIngestSecret ? '' : ' (no secret set)') : null,
      ),
      pull && !needsPerson ? intervalForm : null,
      acts,
      holder,
    );
  }

  const account = (signIn: SignIn) => signIn.accountId ?? (signIn.signIn === 'token' ? 'pasted token' : 'unknown account');

  /** One sign-in and the connections it holds (one per sector), or the connections that have none. */
  function group(title: string, facts: HTMLElement | null, acts: HTMLElement | null, connections: Connection[], data: Record<string, string>): HTMLElement {
    return h(
      'section',
      { class: 'sign-in-group', 'aria-label': title, ...data },
      h('h3', {}, title),
      facts,
      acts,
      connections.length === 0 ? h('p', { class: 'empty' }, 'No connections left on this sign-in.') : h('div', { class: 'cards' }, ...connections.map((connection) => card(connection, data['data-sign-in'] !== ''))),
    );
  }

  function signInGroup(signIn: SignIn, connections: Connection[]): HTMLElement {
    const facts = h(
      'div',
      { class: 'sign-in-facts' },
      h('span', { class: `state ${signIn.status}` }, signIn.status.replaceAll('_', ' ')),
      ' · last refresh ',
      time(signIn.lastRefreshedAt, 'never'),
      signIn.lastError ? h('span', { class: 'error-text' }, ' · ', isolated(signIn.lastError)) : null,
      signIn.grantedScopes.length > 0 ? h('details', { class: 'scopes' }, h('summary', {}, `What the sign-in may read (${signIn.grantedScopes.length})`), h('code', {}, signIn.grantedScopes.join(' '))) : null,
    );
    const acts = h(
      'div',
      { class: 'acts' },
      signIn.signIn === 'oauth' ? signInLink('Sign in again', signIn.provider, `Sign in again to ${signIn.providerName} as ${account(signIn)}`, signIn.id) : null,
      signIn.signIn === 'link' ? signInLink('Repair the bank login', signIn.provider, `Repair the bank login of ${signIn.providerName} item ${account(signIn)}`, signIn.id) : null,
    );
    // Two pasted tokens of one provider have no account to tell them apart: their connections' names do.
    const names = [...new Set(connections.map((connection) => connection.displayName))].join(', ');
    const title = `${signIn.providerName} · ${account(signIn)}${signIn.accountId === null && names ? ` for ${names}` : ''}`;
    return group(title, facts, acts.childElementCount > 0 ? acts : null, connections, { 'data-sign-in': signIn.id, 'data-provider': signIn.provider });
  }

  async function list() {
    try {
      const [{ connections }, { signIns }] = await Promise.all([api<{ connections: Connection[] }>('GET', '/api/connections'), api<{ signIns: SignIn[] }>('GET', '/api/sign-ins')]);
      if (connections.length === 0 && signIns.length === 0) {
        replace(listArea, h('p', { class: 'empty' }, 'No connections yet: add a source to start.'), await firstRunGuide());
        return;
      }
      const held = new Set(signIns.map((signIn) => signIn.id));
      const loose = connections.filter((connection) => connection.signInId === null || !held.has(connection.signInId));
      replace(
        listArea,
        ...signIns.map((signIn) => signInGroup(signIn, connections.filter((connection) => connection.signInId === signIn.id))),
        loose.length > 0 ? group('Pushed by devices, or with no sign-in', h('p', { class: 'hint' }, 'Push connections receive their data from a device; seeded demo data has no source.'), null, loose, { 'data-sign-in': '' }) : null,
      );
    } catch (error) {
      replace(listArea, notice(errorText(error), 'error'));
    }
  }

  replace(
    root,
    h('div', { class: 'toolbar' }, h('a', { class: 'button primary', href: '#connections?add' }, 'Add a source')),
    message,
    secretArea,
    h('p', { class: 'hint' }, 'Grouped by sign-in: each sign-in holds one grant at a provider, and its connections (one per sector) share it.'),
    listArea,
  );
  await list();
  if (wanted) {
    const target = listArea.querySelector<HTMLElement>(`article[data-connection="${CSS.escape(wanted)}"]`);
    if (target) {
      target.classList.add('arrived');
      target.scrollIntoView({ block: 'center' });
      target.focus({ preventScroll: true });
    }
  }
}
