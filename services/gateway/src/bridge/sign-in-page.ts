import type { AuthorizationRequest } from './authorize-request.ts';

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes text for HTML element content and quoted attribute values. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (character) => ESCAPES[character] as string);
}

/** Headers of every sign-in page: never cached, never framed (clickjacking), no scripts, no referrer. */
export const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'x-frame-options': 'DENY',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
} as const;

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#1b1b1b}
h1{font-size:1.4rem}.dest{display:block;padding:.5rem;background:#f3f3f3;border-radius:4px;word-break:break-all}
.error{padding:.75rem;background:#fdecea;border-left:4px solid #c62828}label{display:block;margin-top:1rem;font-weight:600}
input[type=password]{width:100%;padding:.5rem;font:inherit;box-sizing:border-box}button{margin:1rem .5rem 0 0;padding:.5rem 1rem;font:inherit}
.note{color:#555;font-size:.9rem}`;

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="robots" content="noindex"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body>${body}</body></html>`;
}

const hidden = (name: string, value: string | null) => (value === null ? '' : `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`);

export type SignInPageInput = {
  serviceName: string;
  /** The registered client name, or null when the client gave none. */
  clientName: string | null;
  request: AuthorizationRequest;
  formToken: string;
  /** A refusal to show above the form (a refused key, a key with no expiry). */
  error?: string;
};

/**
 * The sign-in page (spec 4.3): the client's name and the exact address the browser will be sent to, both
 * escaped, above the key box. The key goes in a password field and is posted once.
 */
export function renderSignInPage(input: SignInPageInput): string {
  const { request } = input;
  const client = input.clientName === null ? `An unnamed client (${request.clientId})` : input.clientName;
  const error = input.error ? `<p class="error" role="alert">${escapeHtml(input.error)}</p>` : '';
  return page(
    `Sign in to ${input.serviceName}`,
    `<h1>Sign in to ${escapeHtml(input.serviceName)}</h1>
<p><strong>${escapeHtml(client)}</strong> asks to use an agent grant of this gateway: it will read and act on exactly the sectors that agent's key was granted.</p>
<p>If you approve, your browser will be sent to:<code class="dest">${escapeHtml(request.redirectUri)}</code>Approve only if you recognise this address.</p>
${error}<form method="post" action="/authorize">
${hidden('response_type', 'code')}${hidden('client_id', request.clientId)}${hidden('redirect_uri', request.redirectUri)}${hidden('state', request.state)}${hidden('scope', request.scope)}${hidden('code_challenge', request.codeChallenge)}${hidden('code_challenge_method', 'S256')}${hidden('resource', request.resource)}${hidden('form_token', input.formToken)}
<label for="agent_key">Agent key</label>
<input type="password" id="agent_key" name="agent_key" autocomplete="off" spellcheck="false" required>
<button type="submit" name="decision" value="approve">Approve</button><button type="submit" name="decision" value="deny" formnovalidate>Deny</button>
</form>
<p class="note">The key is checked once and never stored; the client receives a token that lasts an hour and is renewed until the key expires. Keys used with a cloud client need an expiry.</p>`,
  );
}

/** A page with no form: the request itself cannot be served (unknown client, wrong address, stale form). */
export function renderRefusalPage(serviceName: string, message: string): string {
  return page(`Sign-in refused — ${serviceName}`, `<h1>Sign-in refused</h1><p class="error" role="alert">${escapeHtml(message)}</p>`);
}
