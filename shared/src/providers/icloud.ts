import { z } from 'zod';
import type { ProviderDescriptor } from './provider-types.ts';

/** Apple's app-specific password format (appleid.apple.com): four groups of four letters. */
const APP_PASSWORD = /^[a-z]{4}-[a-z]{4}-[a-z]{4}-[a-z]{4}$/i;

/** The domains of Apple's own mail addresses, the only ones iCloud Mail's IMAP login takes besides an Apple ID on them. */
export const ICLOUD_MAIL_DOMAINS = ['icloud.com', 'me.com', 'mac.com'] as const;

export function isICloudMailAddress(address: string): boolean {
  const domain = address.slice(address.lastIndexOf('@') + 1).toLowerCase();
  return (ICLOUD_MAIL_DOMAINS as readonly string[]).includes(domain);
}

/**
 * An Apple ID and one app-specific password: iCloud has no OAuth for third parties, and the normal
 * Apple ID password is refused (reference §8.1). One sign-in serves calendar, contacts and mail (IMAP).
 *
 * `mailAddress` is optional and came later: iCloud Mail's IMAP refuses an Apple ID at another domain (a
 * gmail.com Apple ID) and wants the account's own @icloud.com address, while CalDAV and CardDAV take the Apple
 * ID (third-party reports: s-morgan-jeffries/apple-mail-fast-mcp issues 299 and 341). Credentials sealed
 * before it existed have no such key and still parse.
 */
export const ICloudCredentialsSchema = z.object({
  appleId: z.string().trim().toLowerCase().pipe(z.email({ error: 'must be the Apple ID (an email address)' })),
  appPassword: z.string().trim().regex(APP_PASSWORD, { error: 'must be an app-specific password (xxxx-xxxx-xxxx-xxxx), not the Apple ID password' }),
  mailAddress: z
    .string()
    .trim()
    .toLowerCase()
    .pipe(z.email({ error: 'must be your iCloud Mail address (an email address)' }))
    .refine(isICloudMailAddress, { error: 'must be your iCloud Mail address, ending @icloud.com, @me.com or @mac.com' })
    .optional()
    .meta({
      title: 'iCloud Mail address (optional)',
      description: 'Needed for mail when your Apple ID is not an @icloud.com, @me.com or @mac.com address: the address iCloud Mail shows as yours',
    }),
});
export type ICloudCredentials = z.output<typeof ICloudCredentialsSchema>;

export const ICLOUD: ProviderDescriptor = {
  kind: 'icloud',
  displayName: 'Apple iCloud',
  sectors: ['calendar', 'contacts', 'mail'],
  objects: ['calendar.event', 'contacts.contact', 'mail.message'],
  signIn: 'token',
  defaultSyncIntervalMinutes: 15,
  credentialsSchema: ICloudCredentialsSchema,
};
