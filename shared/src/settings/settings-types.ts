import { z } from 'zod';

/** The `settings` row that holds the bridge's public origin; its value is a JSON string. */
export const PUBLIC_ORIGIN_SETTING = 'public_origin';

/** The `settings` row that holds the person's IANA time zone; absent means the machine's zone. */
export const TIME_ZONE_SETTING = 'time_zone';

/** The settings an event can name: the two the Console writes. */
export const SETTING_NAMES = [PUBLIC_ORIGIN_SETTING, TIME_ZONE_SETTING] as const;

/** Published on `<prefix>settings-events` after a setting's change has committed. */
export const SettingsEventSchema = z.object({ setting: z.enum(SETTING_NAMES) });
export type SettingName = (typeof SETTING_NAMES)[number];
export type SettingsEvent = z.infer<typeof SettingsEventSchema>;

export const SETTINGS_EVENTS_CHANNEL = 'settings-events';

/** `GET` and `PUT /api/settings`: the saved origin, the address to give hosted agents, and the person's time zone. */
export const SettingsViewSchema = z.object({
  publicOrigin: z.string().nullable(),
  /** `publicOrigin` plus `/mcp`; null while no origin is saved (bridge off). */
  mcpUrl: z.string().nullable(),
  /** The zone relative dates and local buckets use: the saved one, else the machine's. */
  timeZone: z.string(),
  timeZoneSource: z.enum(['setting', 'hub', 'machine']),
});
export type SettingsView = z.infer<typeof SettingsViewSchema>;

const ALLOWED_FIELDS = ['publicOrigin', 'timeZone'];

/** What the 400 answers of `PUT /api/settings` say; the route and its tests use these texts. */
export const SETTINGS_RULES = {
  publicOriginType: 'must be a string such as "https://pcg.example.com", or null to switch the bridge off',
  timeZoneType: 'must be an IANA time zone name such as "Europe/Berlin", or null to use the home hub\'s zone when one is connected, else the machine\'s',
  body: 'must be a JSON object',
  nothing: `name a setting to change: ${ALLOWED_FIELDS.join(', ')}`,
  serviceName: 'the service name is set by the SERVICE_NAME environment variable, not here',
  unknownFields: (keys: readonly string[]) => {
    const listed = `unknown field ${keys.map((key) => `"${key}"`).join(', ')}; allowed fields: ${ALLOWED_FIELDS.join(', ')}`;
    return keys.includes('serviceName') ? `${listed} (${SETTINGS_RULES.serviceName})` : listed;
  },
} as const;

/**
 * `PUT /api/settings`. Strict, so a misspelt field is refused rather than ignored; each field present is
 * changed, the others are kept. The origin is checked by `parsePublicOrigin` and the zone by
 * `canonicalTimeZone` in the service, whose messages name what to send.
 */
export const UpdateSettingsInputSchema = z
  .strictObject(
    {
      publicOrigin: z.string({ error: SETTINGS_RULES.publicOriginType }).nullable().optional(),
      timeZone: z.string({ error: SETTINGS_RULES.timeZoneType }).nullable().optional(),
    },
    {
      error: (issue: { code?: string; keys?: string[] }) =>
        issue.code === 'unrecognized_keys' ? SETTINGS_RULES.unknownFields(issue.keys ?? []) : SETTINGS_RULES.body,
    },
  )
  .refine((body) => body.publicOrigin !== undefined || body.timeZone !== undefined, { error: SETTINGS_RULES.nothing });
export type UpdateSettingsInput = z.infer<typeof UpdateSettingsInputSchema>;
