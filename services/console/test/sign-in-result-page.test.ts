import { describe, expect, it } from 'vitest';
import { NO_SECTORS_GRANTED } from '@pcg/shared/sign-ins';
import { prefersHtml } from '../src/web/accepts-html.ts';
import { signInResultPage } from '../src/web/sign-in-result-page.ts';

const HOSTILE = '<img src=x onerror=alert(1)>"><script>alert(2)</script>';

describe('the sign-in result page (design 7.2)', () => {
  it('is served to a browser navigation only: curl, fetch and a client asking for JSON keep JSON', () => {
    expect(prefersHtml('text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8')).toBe(true);
    expect(prefersHtml('text/html')).toBe(true);
    expect(prefersHtml(undefined)).toBe(false);
    expect(prefersHtml('*/*')).toBe(false);
    expect(prefersHtml('application/json')).toBe(false);
    expect(prefersHtml('application/json, text/html;q=0.5')).toBe(false);
    expect(prefersHtml('text/html;q=0')).toBe(false);
  });

  it('lists the connections made and the waiting sectors, every value as text', () => {
    const page = signInResultPage({ outcome: 'signed_in', providerName: HOSTILE, renewed: false, connections: [{ displayName: HOSTILE, sector: 'mail' }, { displayName: 'Calendar', sector: 'calendar' }], waiting: ['contacts'] });
    expect(page).not.toContain('<img');
    expect(page).not.toContain('<script');
    expect(page).toContain('&lt;img src=x onerror=alert(1)&gt;&quot;&gt;&lt;script&gt;');
    expect(page).toContain(': 2 connections made.');
    expect(page.match(/<li>/g)).toHaveLength(2);
    expect(page).toContain('(their data is kept): contacts.');
    expect(page).toContain('<a href="/#connections"');
  });

  it('says a refusal in the words of its one constant', () => {
    const page = signInResultPage({ outcome: 'refused', providerName: 'Test', code: 'no_sectors', message: NO_SECTORS_GRANTED });
    expect(page).toContain(`<p class="notice error" role="alert" id="sign-in-message">${NO_SECTORS_GRANTED}</p>`);
    expect(page).toContain('data-code="no_sectors"');
  });
});
