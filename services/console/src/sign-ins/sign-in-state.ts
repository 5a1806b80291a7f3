import { randomBytes, timingSafeEqual } from 'node:crypto';
import { secretDigest } from '@pcg/shared/crypto';
import type { Redis } from '@pcg/shared/redis';
import { DemoEndpointsSchema } from '@pcg/shared/providers';
import { z } from 'zod';

/** How long a started sign-in may take at the provider before its state is stale, in seconds. */
export const SIGN_IN_STATE_TTL_S = 600;

const PendingSchema = z.object({
  provider: z.string(),
  redirectUri: z.string(),
  codeVerifier: z.string().optional(),
  signInId: z.uuid().optional(),
  /** A `link` sign-in: the aggregator's link token whose session the callback reads. */
  linkToken: z.string().max(512).optional(),
  /** A demo's sign-in (issue 42): the stand-ins its new sign-in will be marked with. */
  demoEndpoints: DemoEndpointsSchema.optional(),
  /** SHA-256 (hex) of the browser cookie's nonce. */
  binding: z.string(),
});
export type PendingSignIn = z.infer<typeof PendingSchema>;

const keyOf = (state: string) => `sign-in-state:${secretDigest(state).toString('hex')}`;
const random = () => randomBytes(32).toString('base64url');

/** The cookie that binds a sign-in's state to the browser that started it (design 7.2). */
export const signInCookieName = (provider: string) => `pcg_sign_in_${provider.replace(/[^A-Za-z0-9_-]/g, '_')}`;

/**
 * Pending sign-ins, kept in Redis (losing one only means starting again): each `state` is stored as a
 * digest with what the callback needs, expires after ten minutes, and is taken out on first use, so a
 * replayed state finds nothing. The browser's cookie nonce must match too.
 */
export function createSignInStates(redis: Redis) {
  return {
    /** A state and nonce to put in an address before the sign-in is opened with them (a hosted link's completion redirect). */
    reserve(): { state: string; nonce: string } {
      return { state: random(), nonce: random() };
    },

    async open(pending: Omit<PendingSignIn, 'binding'>, reserved?: { state: string; nonce: string }): Promise<{ state: string; nonce: string }> {
      const { state, nonce } = reserved ?? { state: random(), nonce: random() };
      const value: PendingSignIn = { ...pending, binding: secretDigest(nonce).toString('hex') };
      await redis.set(keyOf(state), JSON.stringify(value), 'EX', SIGN_IN_STATE_TTL_S);
      return { state, nonce };
    },

    /** The pending sign-in of `state`, consumed; null when unknown, stale, used, or not this browser's or provider's. */
    async take(provider: string, state: string | undefined, nonce: string | undefined): Promise<PendingSignIn | null> {
      if (!state) return null;
      const raw = await redis.getdel(keyOf(state));
      if (raw === null) return null;
      const parsed = PendingSchema.safeParse(JSON.parse(raw));
      if (!parsed.success || parsed.data.provider !== provider) return null;
      const expected = Buffer.from(parsed.data.binding, 'hex');
      const presented = secretDigest(nonce ?? '');
      if (!nonce || expected.length !== presented.length || !timingSafeEqual(expected, presented)) return null;
      return parsed.data;
    },
  };
}

/** The S256 code challenge of a PKCE verifier (RFC 7636). */
export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = random();
  return { verifier, challenge: secretDigest(verifier).toString('base64url') };
}

/** One cookie's value from a Cookie header. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const [key, ...rest] = part.trim().split('=');
    if (key === name) return rest.join('=');
  }
  return undefined;
}
