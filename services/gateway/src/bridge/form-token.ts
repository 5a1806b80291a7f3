import { createHmac, timingSafeEqual } from 'node:crypto';
import type { AuthorizationRequest } from './authorize-request.ts';

/** How long a sign-in page may stay open before its form is stale; default 10 minutes. */
export const FORM_LIFETIME_MS = 10 * 60 * 1000;

function mac(key: Buffer, request: AuthorizationRequest, issuedAt: number): string {
  const fields = [request.clientId, request.redirectUri, request.codeChallenge, request.state, request.scope, request.resource, issuedAt];
  return createHmac('sha256', key).update(JSON.stringify(fields)).digest('base64url');
}

/**
 * The sign-in form's token: when the page was shown, and an HMAC over that time and every parameter the
 * code will be bound to. A POST whose parameters were changed, or whose page is too old, is stale.
 */
export function signForm(key: Buffer, request: AuthorizationRequest, now: number): string {
  return `${now}.${mac(key, request, now)}`;
}

export function formIsFresh(key: Buffer, token: string | undefined, request: AuthorizationRequest, now: number, lifetimeMs = FORM_LIFETIME_MS): boolean {
  const match = /^(\d{1,15})\.([A-Za-z0-9_-]{43})$/.exec(token ?? '');
  if (!match) return false;
  const issuedAt = Number(match[1]);
  if (now - issuedAt > lifetimeMs || issuedAt - now > 60_000) return false;
  const expected = Buffer.from(mac(key, request, issuedAt));
  const given = Buffer.from(match[2] as string);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
