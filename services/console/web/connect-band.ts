import { api, errorText } from './api.ts';
import { h, notice, replace, snippet, copyButton } from './dom.ts';
import { RETRY_GUIDANCE } from './texts.ts';
import type { Settings, Status } from './types.ts';


const KEY_PLACEHOLDER = '<agent key>';

export function clientSnippets(url: string, key = KEY_PLACEHOLDER): HTMLElement[] {
  const mcpJson = JSON.stringify({ mcpServers: { 'personal-context': { type: 'http', url, headers: { Authorization: `Bearer ${key}` } } } }, null, 2);
  const sdk = [
    "import { Client } from '@modelcontextprotocol/sdk/client/index.js';",
    "import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';",
    '',
    "const client = new Client({ name: 'my-agent', version: '1.0.0' });",
    `await client.connect(new StreamableHTTPClientTransport(new URL('${url}'), {`,
    `  requestInit: { headers: { Authorization: 'Bearer ${key}' } },`,
    '}));',
  ].join('\n');
  return [
    snippet('Claude Code', `claude mcp add --transport http personal-context ${url} --header "Authorization: Bearer ${key}"`),
    snippet('mcp.json (any client that reads one)', mcpJson),
    snippet('TypeScript MCP SDK', sdk),
  ];
}

function urlLine(label: string, url: string): HTMLElement {
  return h('div', { class: 'url-line' }, h('span', { class: 'url-label' }, label), h('code', { class: 'url' }, url), copyButton(() => url));
}

/**
 * The Connect band (spec 7, 8): where agents connect, ready-to-paste snippets, and — when no gateway is
 * serving MCP — the message that says what to do. Always on screen, refreshed every few seconds.
 */
export async function renderConnectBand(band: HTMLElement): Promise<void> {
  let status: Status | undefined;
  let settings: Settings | undefined;
  try {
    [status, settings] = await Promise.all([
      fetch('/api/status', { cache: 'no-store' }).then((response) => response.json() as Promise<Status>),
      api<Settings>('GET', '/api/settings'),
    ]);
  } catch (error) {
    replace(band, h('h2', {}, 'Connect an agent'), notice(`The Console cannot read its status: ${errorText(error)}`, 'error'));
    return;
  }
  const parts: HTMLElement[] = [h('h2', {}, 'Connect an agent')];
  const mcp = status.mcp;
  if (mcp.served === true) {
    parts.push(urlLine('Agent URL', mcp.address));
  } else if (mcp.served === false) {
    parts.push(notice(mcp.message, 'error'));
  } else {
    parts.push(notice(`Whether MCP is served is unknown: ${mcp.unavailable}`, 'warning'));
  }
  if (settings.mcpUrl) {
    parts.push(urlLine('Public URL (hosted agents)', settings.mcpUrl), h('p', { class: 'hint' }, RETRY_GUIDANCE));
  }
  const url = mcp.served === true ? mcp.address : settings.mcpUrl;
  if (url) {
    parts.push(
      h(
        'details',
        { class: 'snippets' },
        h('summary', {}, 'Connection snippets'),
        h('p', { class: 'hint' }, 'Replace <agent key> with the key shown when you create the agent. Cloud clients need a key with an expiry.'),
        ...clientSnippets(url),
      ),
    );
  }
  // Keep an open snippets panel open across refreshes.
  const wasOpen = band.querySelector('details')?.open ?? false;
  replace(band, ...parts);
  const details = band.querySelector('details');
  if (details) details.open = wasOpen;
}
