import { readFileSync } from 'node:fs';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';

/**
 * Google's discovery documents for Gmail v1, Calendar v3 and People v1 (the copies beside this file, origin in
 * README.md), read two ways: a request a client sent is checked against its method (path template, each query
 * parameter known to the method or to the API's standard parameters, its type, enum, pattern and whether it
 * may repeat, every required one present), and an answer is checked against the method's response schema.
 *
 * No kept library reads discovery documents as JSON Schema (the npm converter `google-discovery-to-swagger`
 * writes Swagger 2.0, which would still need this walk on top), so this file turns each discovery schema into
 * JSON Schema for Ajv itself: `$ref: "Name"` → `#/definitions/Name`, `type: "any"` → no type, the string
 * formats `int64`/`uint64` → digits, `date-time`/`google-datetime` → RFC 3339, `date` → full-date, `byte` →
 * base64 or base64url. An object schema with `properties` and no `additionalProperties` takes no other
 * property: discovery lists every field Google sends, so a field the double invents is a finding.
 */
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

export const GOOGLE_DISCOVERY_FILES = {
  gmail: new URL('./gmail.v1.trimmed.json', import.meta.url),
  calendar: new URL('./calendar.v3.trimmed.json', import.meta.url),
  people: new URL('./people.v1.trimmed.json', import.meta.url),
} as const;
export type DiscoveryApi = keyof typeof GOOGLE_DISCOVERY_FILES;

type DiscoveryParameter = { type: string; location: 'query' | 'path'; required?: boolean; repeated?: boolean; enum?: string[]; pattern?: string; format?: string; minimum?: string; maximum?: string };
type DiscoveryMethod = { id: string; httpMethod: string; path: string; parameters?: Record<string, DiscoveryParameter>; response?: { $ref: string } };
type DiscoveryResource = { methods?: Record<string, DiscoveryMethod>; resources?: Record<string, DiscoveryResource> };
type DiscoveryDoc = { servicePath: string; parameters: Record<string, DiscoveryParameter>; schemas: Record<string, unknown>; resources: Record<string, DiscoveryResource> };

export type DiscoveryProblem = { where: string; message: string };
export type GoogleRequest = { method?: string; path: string; query: URLSearchParams };

/** Which API a path of the Google double (one origin for all three) belongs to; undefined for OAuth and userinfo. */
export function discoveryApiOf(path: string): DiscoveryApi | undefined {
  if (path.startsWith('/gmail/v1/')) return 'gmail';
  if (path.startsWith('/calendar/v3/')) return 'calendar';
  if (path.startsWith('/v1/people') || path.startsWith('/v1/contactGroups') || path.startsWith('/v1/otherContacts')) return 'people';
  return undefined;
}

function toJsonSchema(node: unknown): Record<string, unknown> {
  const schema = (node ?? {}) as Record<string, unknown>;
  if (typeof schema.$ref === 'string') return { $ref: `#/definitions/${schema.$ref}` };
  const out: Record<string, unknown> = {};
  if (typeof schema.type === 'string' && schema.type !== 'any') out.type = schema.type;
  if (Array.isArray(schema.enum)) out.enum = schema.enum;
  if (typeof schema.pattern === 'string') out.pattern = schema.pattern;
  const format = schema.format;
  if (schema.type === 'string' && (format === 'int64' || format === 'uint64')) out.pattern = '^-?[0-9]+$';
  else if (format === 'date-time' || format === 'google-datetime') out.format = 'date-time';
  else if (format === 'date') out.format = 'date';
  else if (format === 'byte') out.pattern = '^[A-Za-z0-9+/_-]*={0,2}$';
  if (schema.items) out.items = toJsonSchema(schema.items);
  if (schema.properties && typeof schema.properties === 'object') {
    out.properties = Object.fromEntries(Object.entries(schema.properties).map(([name, property]) => [name, toJsonSchema(property)]));
    out.additionalProperties = schema.additionalProperties ? toJsonSchema(schema.additionalProperties) : false;
  } else if (schema.additionalProperties) out.additionalProperties = toJsonSchema(schema.additionalProperties);
  return out;
}

type Loaded = { doc: DiscoveryDoc; methods: Array<{ method: DiscoveryMethod; pattern: RegExp; names: string[] }>; validators: Map<string, ValidateFunction> };
const loaded = new Map<DiscoveryApi, Loaded>();
const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: true });
addFormats(ajv);

/** A discovery path template as a regular expression: `{name}` is one segment, `{+name}` may span several (RFC 6570 reserved expansion). */
function templatePattern(template: string): { pattern: RegExp; names: string[] } {
  const names: string[] = [];
  const source = template
    .split(/(\{\+?[^}]+\})/)
    .map((part) => {
      const variable = /^\{(\+?)([^}]+)\}$/.exec(part);
      if (!variable) return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      names.push(variable[2] ?? '');
      return variable[1] === '+' ? '(.+)' : '([^/]+)';
    })
    .join('');
  return { pattern: new RegExp(`^/${source}$`), names };
}

function load(api: DiscoveryApi): Loaded {
  const known = loaded.get(api);
  if (known) return known;
  const doc = JSON.parse(readFileSync(GOOGLE_DISCOVERY_FILES[api], 'utf8')) as DiscoveryDoc;
  const methods: Loaded['methods'] = [];
  const walk = (resource: DiscoveryResource) => {
    for (const method of Object.values(resource.methods ?? {})) methods.push({ method, ...templatePattern(`${doc.servicePath}${method.path}`) });
    for (const child of Object.values(resource.resources ?? {})) walk(child);
  };
  Object.values(doc.resources).forEach(walk);
  ajv.addSchema({ $id: `google-${api}`, definitions: Object.fromEntries(Object.entries(doc.schemas).map(([name, schema]) => [name, toJsonSchema(schema)])) });
  const entry = { doc, methods, validators: new Map<string, ValidateFunction>() };
  loaded.set(api, entry);
  return entry;
}

/** The discovery method a request is for, with its path parameters, or undefined when no method's template matches. */
export function discoveryMethodOf(api: DiscoveryApi, request: GoogleRequest): { method: DiscoveryMethod; pathParameters: Record<string, string> } | undefined {
  const httpMethod = (request.method ?? 'GET').toUpperCase();
  // Fixed segments win over variables (`messages/batchDelete` before `messages/{id}`), as a router would.
  // A path parameter with a `pattern` takes only what it matches (`{+resourceName}` of connections.list is
  // `people/[^/]+`, so `/v1/people/me/connections` is not contactGroups.get's `{+resourceName}`).
  const fits = (candidate: Loaded['methods'][number], match: RegExpExecArray) =>
    candidate.names.every((name, index) => {
      const pattern = candidate.method.parameters?.[name]?.pattern;
      return pattern === undefined || new RegExp(pattern).test(decodeURIComponent(match[index + 1] ?? ''));
    });
  const matches = load(api)
    .methods.filter((candidate) => candidate.method.httpMethod === httpMethod)
    .map((candidate) => ({ candidate, match: candidate.pattern.exec(request.path) }))
    .filter((found): found is { candidate: Loaded['methods'][number]; match: RegExpExecArray } => found.match !== null && fits(found.candidate, found.match))
    .sort((a, b) => a.candidate.names.length - b.candidate.names.length);
  const best = matches[0];
  if (!best?.match) return undefined;
  const pathParameters = Object.fromEntries(best.candidate.names.map((name, index) => [name, decodeURIComponent(best.match?.[index + 1] ?? '')]));
  return { method: best.candidate.method, pathParameters };
}

function valueProblem(name: string, value: string, parameter: DiscoveryParameter): string | undefined {
  if (parameter.type === 'integer') {
    if (!/^-?\d+$/.test(value)) return `${name}=${value} is not an integer`;
    if (parameter.minimum !== undefined && Number(value) < Number(parameter.minimum)) return `${name}=${value} is below ${parameter.minimum}`;
    if (parameter.maximum !== undefined && Number(value) > Number(parameter.maximum)) return `${name}=${value} is above ${parameter.maximum}`;
  }
  if (parameter.type === 'boolean' && value !== 'true' && value !== 'false') return `${name}=${value} is not a boolean`;
  if ((parameter.format === 'int64' && !/^-?\d+$/.test(value)) || (parameter.format === 'uint64' && !/^\d+$/.test(value))) return `${name}=${value} is not a ${parameter.format}`;
  if (parameter.enum && !parameter.enum.includes(value)) return `${name}=${value} is none of ${parameter.enum.join(', ')}`;
  if (parameter.pattern && !new RegExp(parameter.pattern).test(value)) return `${name}=${value} does not match ${parameter.pattern}`;
  if ((parameter.format === 'date-time' || parameter.format === 'google-datetime') && !/^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$/i.test(value)) return `${name}=${value} is not an RFC 3339 timestamp`;
  return undefined;
}

/** Every way a request departs from its discovery method (none: an empty list). */
export function checkGoogleRequest(api: DiscoveryApi, request: GoogleRequest): DiscoveryProblem[] {
  const where = `${request.method ?? 'GET'} ${request.path}`;
  const found = discoveryMethodOf(api, request);
  if (!found) return [{ where, message: `no ${api} method has this path` }];
  const { method, pathParameters } = found;
  const problems: DiscoveryProblem[] = [];
  const own = method.parameters ?? {};
  for (const [name, value] of Object.entries(pathParameters)) {
    const parameter = own[name];
    const problem = parameter ? valueProblem(name, value, parameter) : undefined;
    if (problem) problems.push({ where: `${where} (${method.id})`, message: problem });
  }
  for (const name of new Set(request.query.keys())) {
    const parameter = own[name] ?? load(api).doc.parameters[name];
    if (!parameter || parameter.location !== 'query') {
      problems.push({ where: `${where} (${method.id})`, message: `${name} is not a parameter of ${method.id}` });
      continue;
    }
    const values = request.query.getAll(name);
    if (values.length > 1 && !parameter.repeated) problems.push({ where: `${where} (${method.id})`, message: `${name} is given ${values.length} times but does not repeat` });
    for (const value of values) {
      const problem = valueProblem(name, value, parameter);
      if (problem) problems.push({ where: `${where} (${method.id})`, message: problem });
    }
  }
  for (const [name, parameter] of Object.entries(own)) {
    if (parameter.required && parameter.location === 'query' && !request.query.has(name)) problems.push({ where: `${where} (${method.id})`, message: `the required ${name} is missing` });
  }
  return problems;
}

/** Every way an answer's body departs from the response schema of the request's method (none: an empty list). */
export function checkGoogleAnswer(api: DiscoveryApi, request: GoogleRequest, body: unknown): DiscoveryProblem[] {
  const found = discoveryMethodOf(api, request);
  const where = `${request.method ?? 'GET'} ${request.path}`;
  if (!found) return [{ where, message: `no ${api} method has this path` }];
  const ref = found.method.response?.$ref;
  if (!ref) return [{ where, message: `${found.method.id} answers no body` }];
  const { validators } = load(api);
  let validate = validators.get(ref);
  if (!validate) {
    validate = ajv.getSchema(`google-${api}#/definitions/${ref}`);
    if (!validate) throw new Error(`the ${api} discovery document has no schema ${ref}`);
    validators.set(ref, validate);
  }
  if (validate(body)) return [];
  return (validate.errors ?? []).map((error) => ({
    where: `${where} (${found.method.id} → ${ref})`,
    message: `${error.instancePath || '/'} ${error.message ?? 'is invalid'}${error.params && 'additionalProperty' in error.params ? `: ${String(error.params.additionalProperty)}` : ''}`,
  }));
}
