import { z } from 'zod';
import { isPgText, pgText, PG_VALUE_RULES } from '@pcg/shared/validation';
import { GRANT_TYPES } from './bridge-endpoints.ts';

/** A loopback host as the URL parser writes it: localhost, an IPv4 address in 127.0.0.0/8, or [::1]. */
export const LOOPBACK_HOST = /^(localhost|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|\[::1\])$/;

/** Whether a redirect URI may be registered: https, or http to a loopback host (RFC 8252 7.3); no fragment. */
export function redirectUriProblem(uri: string): string | null {
  // The URL parser would accept and escape these; the raw text is what is stored.
  if (!isPgText(uri)) return `a redirect URI ${PG_VALUE_RULES.text}`;
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return `'${uri}' is not an absolute URL`;
  }
  if (url.hash !== '' || uri.includes('#')) return `'${uri}' must not contain a fragment`;
  if (url.username !== '' || url.password !== '') return `'${uri}' must not contain a username or password`;
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:' && LOOPBACK_HOST.test(url.hostname)) return null;
  return `'${uri}' must use https, or http to a loopback address (localhost, 127.0.0.1 or [::1])`;
}

/** Optional fields sent as null are treated as absent: some clients serialise every field they know. */
const optional = <T extends z.ZodType>(schema: T) => z.preprocess((value) => (value === null ? undefined : value), schema.optional());
const text = (max: number, field: string) =>
  pgText(z.string({ error: `'${field}' must be a string` }).max(max, { error: `'${field}' must be at most ${max} characters` }), `'${field}' ${PG_VALUE_RULES.text}`);
const webUrl = (field: string) =>
  text(2000, field).refine((value) => /^https?:\/\//i.test(value) && URL.canParse(value), { error: `'${field}' must be an http or https URL` });

/**
 * RFC 7591 client metadata as the bridge accepts it. Unknown fields are ignored (RFC 7591 2). Public
 * clients only: any `token_endpoint_auth_method` is answered as `none`, which RFC 7591 3.2.1 allows.
 */
export const ClientRegistrationSchema = z.object(
  {
    redirect_uris: z
      .array(z.string({ error: "'redirect_uris' must hold strings" }), { error: "'redirect_uris' is required: an array of the client's redirect URIs" })
      .min(1, { error: "'redirect_uris' must hold at least one URI" })
      .max(20, { error: "'redirect_uris' may hold at most 20 URIs" })
      .superRefine((uris, context) => {
        for (const uri of uris) {
          const problem = redirectUriProblem(uri);
          if (problem) context.addIssue({ code: 'custom', message: `redirect_uris: ${problem}` });
        }
      }),
    client_name: optional(text(200, 'client_name').min(1, { error: "'client_name' must not be empty" })),
    grant_types: optional(
      z.array(z.enum(GRANT_TYPES, { error: `'grant_types' may hold only ${GRANT_TYPES.join(' and ')}` }), { error: "'grant_types' must be an array" }),
    ),
    response_types: optional(z.array(z.literal('code', { error: "'response_types' may hold only 'code'" }), { error: "'response_types' must be an array" })),
    token_endpoint_auth_method: optional(text(100, 'token_endpoint_auth_method')),
    scope: optional(text(1000, 'scope')),
    client_uri: optional(webUrl('client_uri')),
    logo_uri: optional(webUrl('logo_uri')),
    tos_uri: optional(webUrl('tos_uri')),
    policy_uri: optional(webUrl('policy_uri')),
    software_id: optional(text(200, 'software_id')),
    software_version: optional(text(200, 'software_version')),
    contacts: optional(z.array(text(200, 'contacts'), { error: "'contacts' must be an array of strings" }).max(10)),
  },
  { error: 'the registration body must be a JSON object' },
);
export type ClientRegistration = z.output<typeof ClientRegistrationSchema>;

/** Metadata kept as registered and echoed back; the fields the bridge fixes itself are not among them. */
export function echoedMetadata(registration: ClientRegistration): Record<string, string | string[]> {
  const { redirect_uris: _uris, client_name: _name, grant_types: _grants, response_types: _responses, token_endpoint_auth_method: _method, ...rest } = registration;
  return Object.fromEntries(Object.entries(rest).filter(([, value]) => value !== undefined)) as Record<string, string | string[]>;
}

/** The registration answer (RFC 7591 3.2.1): what was registered, with no null anywhere. */
export function registrationAnswer(client: { id: string; createdAt: string; clientName: string | null; redirectUris: string[]; metadata: Record<string, unknown> }) {
  return {
    client_id: client.id,
    client_id_issued_at: Math.floor(Date.parse(client.createdAt) / 1000),
    ...(client.clientName === null ? {} : { client_name: client.clientName }),
    redirect_uris: client.redirectUris,
    grant_types: [...GRANT_TYPES],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    ...client.metadata,
  };
}
