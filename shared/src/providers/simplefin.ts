import { z } from 'zod';
import type { ProviderDescriptor } from './provider-types.ts';

/** Loopback names: a claim or access URL may use one, over http, only when the worker allows the local double. */
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * Why a bridge address may not be used, or undefined when it may: https only, except a loopback host
 * when `allowLoopback` (the local double). No query or fragment; the access URL alone carries a user name.
 */
export function bridgeAddressRefusal(url: URL, allowLoopback: boolean): string | undefined {
  const loopback = LOOPBACK.has(url.hostname.toLowerCase());
  if (loopback && !allowLoopback) return 'a loopback address is allowed only for the local test bridge';
  if (url.protocol !== 'https:' && !(loopback && url.protocol === 'http:')) return 'the bridge address must be https';
  if (url.search || url.hash) return 'the bridge address must carry no query or fragment';
  return undefined;
}

/** The setup token as the operator pastes it: base64 of the bridge's claim URL (reference §2.1). */
export const SimplefinSetupSchema = z.object({
  setupToken: z.string().trim().min(8).max(2048),
  /** The claim host the operator was shown and confirms; the claim runs only when it matches. */
  confirmHost: z.string().trim().min(1).max(255).optional(),
});
export type SimplefinSetup = z.output<typeof SimplefinSetupSchema>;

/** What the claim returns and the sync-worker keeps sealed: the access URL with its `user:pass`. */
export const SimplefinAccessSchema = z.object({ accessUrl: z.url({ protocol: /^https?$/ }) });
export type SimplefinAccess = z.output<typeof SimplefinAccessSchema>;

/** A setup token that is not base64 of an http(s) URL. */
export const SETUP_TOKEN_UNREADABLE = 'this is not a SimpleFIN setup token: it should be base64 text that decodes to the bridge\'s claim address';

/** The claim URL a setup token holds, or undefined when the token is not one. */
export function decodeSetupToken(token: string): URL | undefined {
  const text = Buffer.from(token.trim(), 'base64').toString('utf8').trim();
  if (!/^https?:\/\/[^\s]+$/.test(text)) return undefined;
  try {
    const url = new URL(text);
    return url.username || url.password ? undefined : url;
  } catch {
    return undefined;
  }
}

export const SIMPLEFIN: ProviderDescriptor = {
  kind: 'simplefin',
  displayName: 'Bank-link bridge (SimpleFIN)',
  // Spec 2.5: one connection holding every bank linked at the bridge, no bank picker.
  sectors: ['finance'],
  objects: ['finance.account', 'finance.transaction', 'finance.holding'],
  signIn: 'token',
  // The bridge expects at most about 24 requests a day (reference §2.4); the connector also keeps an hour between syncs.
  defaultSyncIntervalMinutes: 360,
  credentialsSchema: SimplefinSetupSchema,
  claim: { decode: decodeSetupToken },
};
