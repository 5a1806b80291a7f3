import { z } from 'zod';

/** The `settings` row that holds the bridge's public origin; its value is a JSON string. */
export const PUBLIC_ORIGIN_SETTING = 'public_origin';

/** The settings an event can name; the only one the Console writes is the public origin. */
export const SETTING_NAMES = [PUBLIC_ORIGIN_SETTING] as const;

/** Published on `<prefix>settings-events` after a setting's change has committed. */
export const SettingsEventSchema = z.object({ setting: z.enum(SETTING_NAMES) });
export type SettingsEvent = z.infer<typeof SettingsEventSchema>;

export const SETTINGS_EVENTS_CHANNEL = 'settings-events';

/** `GET` and `PUT /api/settings`: the saved origin and the address to give hosted agents. */
export const SettingsViewSchema = z.object({
  publicOrigin: z.string().nullable(),
  /** `publicOrigin` plus `/mcp`; null while no origin is saved (bridge off). */
  mcpUrl: z.string().nullable(),
});
export type SettingsView = z.infer<typeof SettingsViewSchema>;

const ALLOWED_FIELDS = ['publicOrigin'];

/** What the 400 answers of `PUT /api/settings` say; the route and its tests use these texts. */
export const SETTINGS_RULES = {
  publicOriginType: 'must be a string such as "https://pcg.example.com", or null to switch the bridge off',
  body: 'must be a JSON object',
  serviceName: 'the service name is set by the SERVICE_NAME environment variable, not here',
  unknownFields: (keys: readonly string[]) => {
    const listed = `unknown field ${keys.map((key) => `"${key}"`).join(', ')}; allowed fields: ${ALLOWED_FIELDS.join(', ')}`;
    return keys.includes('serviceName') ? `${listed} (${SETTINGS_RULES.serviceName})` : listed;
  },
} as const;

/**
 * `PUT /api/settings`. Strict, so a misspelt field is refused rather than ignored. The origin itself is
 * checked by `parsePublicOrigin` in the service, whose message names the origin to save.
 */
export const UpdateSettingsInputSchema = z.strictObject(
  { publicOrigin: z.string({ error: SETTINGS_RULES.publicOriginType }).nullable() },
  {
    error: (issue: { code?: string; keys?: string[] }) =>
      issue.code === 'unrecognized_keys' ? SETTINGS_RULES.unknownFields(issue.keys ?? []) : SETTINGS_RULES.body,
  },
);
export type UpdateSettingsInput = z.infer<typeof UpdateSettingsInputSchema>;
