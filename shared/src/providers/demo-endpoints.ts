import { isIP } from 'node:net';
import { z } from 'zod';
import { createOriginRebaser, type RebaseUrl } from './provider-origins.ts';

/** A loopback IP literal only (127.0.0.0/8 or ::1): a name could resolve anywhere, so none is taken. */
export function isLoopbackHost(hostname: string): boolean {
  const bare = hostname.replace(/^\[|\]$/g, '');
  if (isIP(bare) === 4) return bare.split('.')[0] === '127';
  return isIP(bare) === 6 && (bare === '::1' || bare === '0:0:0:0:0:0:0:1');
}

const loopbackOrigin = z
  .url({ protocol: /^http$/, error: 'must be an http:// origin' })
  .refine((value) => {
    const url = new URL(value);
    return !url.username && !url.password && !url.search && !url.hash && (url.pathname === '/' || url.pathname === '') && isLoopbackHost(url.hostname);
  }, { error: 'must be an http origin on a loopback address (127.0.0.0/8 or [::1]), nothing more' })
  .transform((value) => new URL(value).origin);

/** One `name=address:port` entry of a demo's iCloud map: an iCloud name onto a loopback IP literal. */
function icloudEntryProblem(entry: string): string | undefined {
  const match = /^([a-z0-9.-]+)=(?:\[([^\]]+)\]|([^:\s]+)):(\d{1,5})$/.exec(entry.trim().toLowerCase());
  if (!match) return `'${entry}' is not name=address:port`;
  const [, name = '', bracketed, plain, port] = match;
  if (!(name === 'imap.mail.me.com' || /^[a-z0-9-]+\.icloud\.com$/.test(name))) return `'${name}' is neither a *.icloud.com name nor imap.mail.me.com`;
  if (!isLoopbackHost(bracketed ?? plain ?? '')) return `'${bracketed ?? plain}' is not a loopback address`;
  if (!(Number(port) >= 1 && Number(port) <= 65_535)) return `port ${port} is out of range`;
  return undefined;
}

/** A demo's iCloud names on its local servers, in the form of `ICLOUD_RESOLVE`. */
const icloudResolve = z
  .string()
  .max(1000)
  .superRefine((text, context) => {
    const entries = text.split(',').filter((entry) => entry.trim() !== '');
    if (entries.length === 0) context.addIssue({ code: 'custom', message: 'name at least one name=address:port' });
    for (const entry of entries) {
      const problem = icloudEntryProblem(entry);
      if (problem) context.addIssue({ code: 'custom', message: problem });
    }
  });

/** The demo's own CA (PEM certificates only), trusted for that sign-in's iCloud names besides the system's CAs. */
const caPem = z
  .string()
  .max(20_000)
  .regex(/^(\s*-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\s]+-----END CERTIFICATE-----\s*)+$/, { error: 'must be PEM certificates' });

/**
 * The stand-in origins of a demo sign-in (issue 42): which local double answers for which provider's
 * real origins, under the same names as the `<PROVIDER>_BASE_URL` settings they replace for that sign-in
 * alone. Loopback http origins only; set once when the sign-in is made and never changed.
 */
export const DemoEndpointsSchema = z
  .object({
    WHOOP_BASE_URL: loopbackOrigin.optional(),
    GOOGLE_BASE_URL: loopbackOrigin.optional(),
    PLAID_BASE_URL: loopbackOrigin.optional(),
    MICROSOFT_LOGIN_BASE_URL: loopbackOrigin.optional(),
    MICROSOFT_GRAPH_BASE_URL: loopbackOrigin.optional(),
    /** The demo bank-link bridge: a claim and access address at this origin is taken over http on loopback. */
    SIMPLEFIN_BRIDGE_URL: loopbackOrigin.optional(),
    /** The demo iCloud account: its names on the demo's Radicale and Dovecot (as `ICLOUD_RESOLVE`) ... */
    ICLOUD_RESOLVE: icloudResolve.optional(),
    /** ... with TLS verified against the demo's CA (as `ICLOUD_EXTRA_CA_FILE`, for this sign-in alone). */
    ICLOUD_CA_PEM: caPem.optional(),
  })
  .strict()
  .refine((endpoints) => Object.values(endpoints).some(Boolean), { error: 'name at least one stand-in origin' });
export type DemoEndpoints = z.output<typeof DemoEndpointsSchema>;

/** A demo sign-in's stand-ins, or else the configured ones: what a sign-in's provider addresses map onto. */
export function rebaserFor(demoEndpoints: DemoEndpoints | null | undefined, configured: RebaseUrl): RebaseUrl {
  return demoEndpoints ? createOriginRebaser(demoEndpoints) : configured;
}

/** A key that names a set of stand-ins (the same set gives the same key, whatever the order of its fields). */
export function demoEndpointsKey(demoEndpoints: DemoEndpoints): string {
  return JSON.stringify(Object.entries(demoEndpoints).filter(([, value]) => value !== undefined).sort(([a], [b]) => a.localeCompare(b)));
}
