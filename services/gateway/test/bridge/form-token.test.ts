import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { AuthorizationRequest } from '../../src/bridge/authorize-request.ts';
import { FORM_LIFETIME_MS, formIsFresh, signForm } from '../../src/bridge/form-token.ts';

const key = randomBytes(32);
const now = Date.UTC(2026, 10, 22, 12, 0, 0);
const request: AuthorizationRequest = {
  clientId: 'pcgc_client',
  redirectUri: 'https://claude.ai/api/mcp/auth_callback',
  codeChallenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
  state: 'state-1',
  scope: 'claudeai',
  resource: 'https://pcg.example.com/mcp',
};
const token = signForm(key, request, now);

describe('form token', () => {
  it('lives 10 minutes by default', () => {
    expect(FORM_LIFETIME_MS).toBe(600_000);
  });

  it.each([
    ['at once', 0],
    ['a minute later', 60_000],
    ['just before 10 minutes', FORM_LIFETIME_MS - 1],
    ['at exactly 10 minutes', FORM_LIFETIME_MS],
  ])('is fresh %s', (_label, elapsed) => {
    expect(formIsFresh(key, token, request, now + elapsed)).toBe(true);
  });

  it.each([
    ['just after 10 minutes', FORM_LIFETIME_MS + 1],
    ['an hour later', 3_600_000],
  ])('is stale %s', (_label, elapsed) => {
    expect(formIsFresh(key, token, request, now + elapsed)).toBe(false);
  });

  it('honours a shorter lifetime when given one', () => {
    expect(formIsFresh(key, token, request, now + 1001, 1000)).toBe(false);
    expect(formIsFresh(key, token, request, now + 1000, 1000)).toBe(true);
  });

  it.each<[string, Partial<AuthorizationRequest>]>([
    ['clientId', { clientId: 'pcgc_other' }],
    ['redirectUri', { redirectUri: 'https://evil.example/cb' }],
    ['codeChallenge', { codeChallenge: 'A'.repeat(43) }],
    ['state', { state: 'state-2' }],
    ['state (dropped)', { state: null }],
    ['scope', { scope: 'claudeai extra' }],
    ['scope (dropped)', { scope: null }],
    ['resource', { resource: 'https://pcg.example.com/' }],
  ])('is stale when %s changes', (_label, change) => {
    expect(formIsFresh(key, token, { ...request, ...change }, now)).toBe(false);
  });

  it('tells a null field from an empty one', () => {
    const blank = { ...request, state: null, scope: null };
    const signed = signForm(key, blank, now);
    expect(formIsFresh(key, signed, blank, now)).toBe(true);
    expect(formIsFresh(key, signed, { ...blank, state: '' }, now)).toBe(false);
    expect(formIsFresh(key, signed, { ...blank, scope: '' }, now)).toBe(false);
  });

  it('is stale under another key', () => {
    expect(formIsFresh(randomBytes(32), token, request, now)).toBe(false);
  });

  it('is stale when its issue time is moved, even into the window', () => {
    const [, signature] = token.split('.');
    expect(formIsFresh(key, `${now + 1000}.${signature}`, request, now + 1000)).toBe(false);
  });

  it.each([
    ['absent', undefined],
    ['empty', ''],
    ['only a time', `${now}`],
    ['only a signature', token.split('.')[1]],
    ['a short signature', token.slice(0, -1)],
    ['a long signature', `${token}A`],
    ['a negative time', `-${token}`],
    ['a decimal time', token.replace('.', '.5.')],
    ['a signature in base64 alphabet', `${token.slice(0, -1)}+`],
    ['surrounding whitespace', ` ${token}`],
    ['trailing newline', `${token}\n`],
  ])('is stale when %s', (_label, malformed) => {
    expect(formIsFresh(key, malformed, request, now)).toBe(false);
  });

  it('accepts an issue time up to a minute ahead (clock skew) and no further', () => {
    expect(formIsFresh(key, signForm(key, request, now + 60_000), request, now)).toBe(true);
    expect(formIsFresh(key, signForm(key, request, now + 60_001), request, now)).toBe(false);
    expect(formIsFresh(key, signForm(key, request, now + 3_600_000), request, now)).toBe(false);
  });
});
