import { z } from 'zod';
import type { ProviderDescriptor } from './provider-types.ts';

// zod's url check lets "http://" and "http:" through, and runs the refinements after a failed check too, so
// each refinement parses for itself: a value `new URL` cannot read is a refusal here, never a thrown TypeError.
const parsed = (value: string) => (URL.canParse(value) ? new URL(value) : undefined);

const httpOrigin = z
  .url({ protocol: /^https?$/, error: 'must be an http:// or https:// address' })
  .refine((value) => (parsed(value)?.hostname ?? '') !== '', { error: 'must name the hub\'s host, as in http://homeassistant.local:8123' })
  .refine((value) => {
    const url = parsed(value);
    return url === undefined || (!url.username && !url.password && !url.search && !url.hash);
  }, { error: 'must carry no user name, password, query or fragment' })
  .transform((value) => value.replace(/\/+$/, ''));

/** A Home Assistant hub: its base address (e.g. http://homeassistant.local:8123) and a long-lived access token. */
export const HomeAssistantCredentialsSchema = z.object({
  baseUrl: httpOrigin,
  token: z.string().trim().min(1).max(4096),
});
export type HomeAssistantCredentials = z.output<typeof HomeAssistantCredentialsSchema>;

export const HOME_ASSISTANT: ProviderDescriptor = {
  kind: 'home-assistant',
  displayName: 'Home Assistant',
  sectors: ['home'],
  objects: ['home.entity'],
  liveObjects: ['home.entity'],
  signIn: 'token',
  defaultSyncIntervalMinutes: 15,
  credentialsSchema: HomeAssistantCredentialsSchema,
  addressFields: ['baseUrl'],
};
