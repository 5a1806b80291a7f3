import { z } from 'zod';
import type { ProviderDescriptor } from './provider-types.ts';

/** Apple's app-specific password format (appleid.apple.com): four groups of four letters. */
const APP_PASSWORD = /^[a-z]{4}-[a-z]{4}-[a-z]{4}-[a-z]{4}$/i;

/**
 * An Apple ID and one app-specific password: iCloud has no OAuth for third parties, and the normal
 * Apple ID password is refused (reference §8.1). One sign-in serves calendar, contacts and mail (IMAP).
 */
export const ICloudCredentialsSchema = z.object({
  appleId: z.string().trim().toLowerCase().pipe(z.email({ error: 'must be the Apple ID (an email address)' })),
  appPassword: z.string().trim().regex(APP_PASSWORD, { error: 'must be an app-specific password (xxxx-xxxx-xxxx-xxxx), not the Apple ID password' }),
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
