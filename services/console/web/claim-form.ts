import { api, ApiError, errorText } from './api.ts';
import { button, h, labelled, notice, replace } from './dom.ts';
import { CLAIM_REFUSED_TITLE } from './texts.ts';
import type { ClaimAnswer, Connection, Provider } from './types.ts';


/**
 * A bridge's connect form (spec 2.5, issue 16): paste the setup token, see the host it would be claimed
 * at, confirm, and the sync-worker claims it once. Nothing is sent to the bridge before the confirm; a
 * 403 is the bridge saying the token is unknown or already claimed, and is shown as a possible compromise.
 */
export function claimForm(provider: Provider, done: (connections: Connection[], text: string) => Promise<void>): HTMLElement {
  const path = `/api/connect/${encodeURIComponent(provider.kind)}/claim`;
  const token = h('input', { type: 'password', name: 'setupToken', required: true, autocomplete: 'off', spellcheck: false, maxLength: 2048 });
  const displayName = h('input', { type: 'text', name: 'displayName', maxLength: 200, placeholder: provider.displayName, autocomplete: 'off' });
  const interval = h('input', { type: 'number', name: 'syncIntervalMinutes', min: 60, max: 10080, value: String(provider.defaultSyncIntervalMinutes ?? 360) });
  const step = h('div', { class: 'claim-step', 'aria-live': 'polite' });
  const say = (...parts: HTMLElement[]) => replace(step, ...parts);
  const refused = (error: unknown) =>
    error instanceof ApiError && error.status === 403
      ? say(h('div', { class: 'notice error', role: 'alert', 'data-claim-refused': 'true' }, h('strong', {}, CLAIM_REFUSED_TITLE), ' ', errorText(error)))
      : say(notice(errorText(error), 'error'));

  const form = h(
    'form',
    { class: 'connect', 'aria-label': `Connect ${provider.displayName}`, 'data-provider': provider.kind },
    h('h3', {}, provider.displayName),
    h('p', { class: 'hint' }, `Fills ${provider.sectors.join(', ')}: ${provider.objects.join(', ')}. One connection holds every bank linked at the bridge.`),
    labelled('Setup token', token, 'Paste the setup token from the bridge. It works once; the gateway claims it after you confirm the host.'),
    labelled('Name in the Console', displayName),
    labelled('Sync every (minutes)', interval, 'At least 60: the bridge expects about 24 requests a day.'),
    h('button', { type: 'submit' }, 'Check setup token'),
    step,
  );

  async function claim(confirmHost: string) {
    say(notice(`Claiming at ${confirmHost}…`, 'info'));
    try {
      const body = { setupToken: token.value.trim(), confirmHost, ...(displayName.value.trim() ? { displayName: displayName.value.trim() } : {}), syncIntervalMinutes: Number(interval.value) };
      const answer = await api<ClaimAnswer>('POST', path, body);
      const names = answer.status === 'signed_in' ? answer.connections.map((connection) => connection.displayName).join(', ') : '';
      token.value = '';
      displayName.value = '';
      const text = `Claimed at ${confirmHost}. Connected: ${names}. The first sync is queued.`;
      say(notice(text, 'ok'));
      await done(answer.status === 'signed_in' ? answer.connections : [], text);
    } catch (error) {
      refused(error);
    }
  }

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void (async () => {
      try {
        const answer = await api<ClaimAnswer>('POST', path, { setupToken: token.value.trim() });
        if (answer.status !== 'confirm') return;
        say(
          h(
            'div',
            { class: 'confirm-claim', role: 'group', 'aria-label': 'Confirm the claim host' },
            h('p', {}, 'This setup token will be claimed at ', h('code', { 'data-claim-host': answer.claimHost }, answer.claimHost), '. Claim it only if you recognise this host as your bridge.'),
            answer.https ? null : notice('This address is not https: only a local test bridge may use one, and the claim is refused otherwise.', 'warning'),
            button(`Claim at ${answer.claimHost}`, () => void claim(answer.claimHost)),
            button('Cancel', () => step.replaceChildren()),
          ),
        );
      } catch (error) {
        refused(error);
      }
    })();
  });
  return form;
}
