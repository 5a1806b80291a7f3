import { describe, expect, it } from 'vitest';
import type { AuthorizationRequest } from '../../src/bridge/authorize-request.ts';
import { escapeHtml, PAGE_HEADERS, renderSignInPage, type SignInPageInput } from '../../src/bridge/sign-in-page.ts';

const HOSTILE_NAME = '<script>alert(1)</script>';
const HOSTILE_URI = 'https://client.example/cb?next="><img src=x onerror=alert(1)>';

const request: AuthorizationRequest = {
  clientId: 'pcgc_client',
  redirectUri: HOSTILE_URI,
  codeChallenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
  state: `st"'<&>`,
  scope: 'claudeai',
  resource: 'https://pcg.example.com/mcp',
};
const input: SignInPageInput = { serviceName: 'Personal Context Gateway', clientName: HOSTILE_NAME, request, formToken: '1795000000000.sig' };

/** Undoes exactly the five escapes of escapeHtml, for reading attribute values back. */
const unescape = (value: string) =>
  value.replace(/&(lt|gt|quot|#39|amp);/g, (_all, entity: string) => ({ lt: '<', gt: '>', quot: '"', '#39': "'", amp: '&' })[entity] ?? '');

/** The page up to the agent key box, as the text a person reads (tags removed, entities kept). */
function textAboveKeyBox(html: string): string {
  const keyBox = html.search(/<input[^>]*name="agent_key"/);
  expect(keyBox).toBeGreaterThan(0);
  return html.slice(0, keyBox).replace(/<[^>]*>/g, ' ');
}

function hiddenFields(html: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const match of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    expect(fields.has(match[1] ?? ''), `duplicate hidden field ${match[1]}`).toBe(false);
    fields.set(match[1] ?? '', unescape(match[2] ?? ''));
  }
  return fields;
}

describe('escapeHtml', () => {
  it('escapes the five characters that matter in content and quoted attributes', () => {
    expect(escapeHtml(`<>&"'`)).toBe('&lt;&gt;&amp;&quot;&#39;');
  });

  it('escapes every occurrence, ampersands first in effect, and leaves other text alone', () => {
    expect(escapeHtml('a&amp;b <<c>> "d" é')).toBe('a&amp;amp;b &lt;&lt;c&gt;&gt; &quot;d&quot; é');
  });
});

describe('renderSignInPage', () => {
  const html = renderSignInPage(input);

  it('shows a hostile client name and redirect URI only escaped', () => {
    expect(html).not.toContain('<script');
    expect(html).not.toContain('<img');
    expect(html).not.toContain('onerror=alert(1)>');
    expect(html).toContain(escapeHtml(HOSTILE_NAME));
    expect(html).toContain(escapeHtml(HOSTILE_URI));
  });

  it('shows the client name and the exact redirect URI above the key box', () => {
    const text = textAboveKeyBox(html);
    expect(text).toContain(escapeHtml(HOSTILE_NAME));
    expect(text).toContain(escapeHtml(HOSTILE_URI));
  });

  it('asks for the key in one password field named agent_key', () => {
    const boxes = html.match(/<input[^>]*name="agent_key"[^>]*>/g) ?? [];
    expect(boxes).toHaveLength(1);
    expect(boxes[0]).toContain('type="password"');
    expect(boxes[0]).not.toMatch(/\svalue=/);
  });

  it('posts to /authorize', () => {
    expect(html).toMatch(/<form method="post" action="\/authorize">/);
  });

  it('carries every request field in hidden inputs, values intact', () => {
    expect(Object.fromEntries(hiddenFields(html))).toEqual({
      response_type: 'code',
      client_id: request.clientId,
      redirect_uri: request.redirectUri,
      state: request.state,
      scope: request.scope,
      code_challenge: request.codeChallenge,
      code_challenge_method: 'S256',
      resource: request.resource,
      form_token: input.formToken,
    });
  });

  it('leaves out state and scope when the request has none', () => {
    const fields = hiddenFields(renderSignInPage({ ...input, request: { ...request, state: null, scope: null } }));
    expect(fields.has('state')).toBe(false);
    expect(fields.has('scope')).toBe(false);
    expect(fields.get('code_challenge_method')).toBe('S256');
  });

  it('shows an error, escaped, above the key box when given one', () => {
    const error = 'Key refused <b>now</b> & "then"';
    const page = renderSignInPage({ ...input, error });
    expect(page).not.toContain('<b>now</b>');
    expect(textAboveKeyBox(page)).toContain(escapeHtml(error));
  });

  it('shows no error box when there is no error', () => {
    expect(html).not.toContain('role="alert"');
  });

  it('names an unnamed client by its id above the key box', () => {
    const page = renderSignInPage({ ...input, clientName: null, request: { ...request, clientId: 'pcgc_<anon>' } });
    expect(page).not.toContain('pcgc_<anon>');
    expect(textAboveKeyBox(page)).toContain(escapeHtml('pcgc_<anon>'));
  });

  it('escapes the service name in the title and the heading', () => {
    const page = renderSignInPage({ ...input, serviceName: '<i>PCG</i>' });
    expect(page).not.toContain('<i>PCG</i>');
    expect(page.match(/&lt;i&gt;PCG&lt;\/i&gt;/g)).toHaveLength(2);
  });
});

describe('PAGE_HEADERS', () => {
  it('forbid framing', () => {
    expect(PAGE_HEADERS['x-frame-options']).toBe('DENY');
    const directives = PAGE_HEADERS['content-security-policy'].split(';').map((directive) => directive.trim());
    expect(directives).toContain("frame-ancestors 'none'");
  });

  it('forbid caching', () => {
    expect(PAGE_HEADERS['cache-control']).toBe('no-store');
  });

  it('allow no script', () => {
    const directives = PAGE_HEADERS['content-security-policy'].split(';').map((directive) => directive.trim());
    expect(directives).toContain("default-src 'none'");
    expect(directives.some((directive) => directive.startsWith('script-src'))).toBe(false);
  });

  it('serve HTML as UTF-8', () => {
    expect(PAGE_HEADERS['content-type']).toBe('text/html; charset=utf-8');
  });
});
