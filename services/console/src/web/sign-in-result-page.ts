/** What the operator's browser is told when a sign-in ends (or cannot start). */
export type SignInResultView =
  | {
      outcome: 'signed_in';
      providerName: string;
      renewed: boolean;
      connections: ReadonlyArray<{ displayName: string; sector: string }>;
      waiting: readonly string[];
    }
  | { outcome: 'refused'; providerName: string; code: string; message: string };

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Every value goes into the page as text: a provider's name, an error text or a connection's name is data. */
export const escapeHtml = (value: string) => value.replace(/[&<>"']/g, (char) => ENTITIES[char] ?? char);

const plural = (count: number, one: string, many: string) => `${count} ${count === 1 ? one : many}`;

function body(view: SignInResultView): { title: string; lines: string[] } {
  const provider = escapeHtml(view.providerName);
  if (view.outcome === 'refused') {
    return {
      title: `The sign-in to ${provider} made no change`,
      lines: [`<p class="notice error" role="alert" id="sign-in-message">${escapeHtml(view.message)}</p>`],
    };
  }
  const made = view.renewed
    ? `Sign-in to ${provider} renewed: ${plural(view.connections.length, 'connection syncs', 'connections sync')} with it.`
    : `Signed in to ${provider}: ${plural(view.connections.length, 'connection', 'connections')} made.`;
  const items = view.connections.map((connection) => `<li>${escapeHtml(connection.displayName)} <span class="muted">· ${escapeHtml(connection.sector)}</span></li>`);
  return {
    title: view.renewed ? `Sign-in to ${provider} renewed` : `Signed in to ${provider}`,
    lines: [
      `<p class="notice ok" role="status" id="sign-in-message">${made}</p>`,
      items.length > 0 ? `<ul id="sign-in-connections" aria-label="Connections">${items.join('')}</ul>` : '',
      view.waiting.length > 0
        ? `<p class="notice warning">No longer granted, waiting for a sign-in that grants them (their data is kept): ${view.waiting.map(escapeHtml).join(', ')}.</p>`
        : '',
    ],
  };
}

/**
 * The page a browser lands on from the provider (design 7.2): the outcome as text, and a link back to the
 * Console's connections. No script at all, so the Console's CSP holds for it as for the rest.
 */
export function signInResultPage(view: SignInResultView): string {
  const { title, lines } = body(view);
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${title} · Personal Context Gateway</title>`,
    '<link rel="icon" href="/assets/icon.svg" type="image/svg+xml"><link rel="stylesheet" href="/assets/console.css"></head>',
    '<body><header class="top"><h1>Personal Context Gateway <span class="subtitle">Console</span></h1></header>',
    `<main id="main" data-outcome="${view.outcome}"${view.outcome === 'refused' ? ` data-code="${escapeHtml(view.code)}"` : ''}>`,
    `<h2>${title}</h2>`,
    ...lines.filter((line) => line !== ''),
    '<p><a href="/#connections" id="back-to-console">Back to the Console’s connections</a></p>',
    '</main></body></html>',
  ].join('\n');
}
