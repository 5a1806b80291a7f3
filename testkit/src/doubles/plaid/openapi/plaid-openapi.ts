import { readFileSync } from 'node:fs';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { OpenAPIV3 } from 'openapi-types';

/**
 * Plaid's own description of its API (plaid/plaid-openapi `2020-09-14.yml`, trimmed to the operations
 * the gateway uses: see README.md beside it), compiled once with Ajv so a test can check a request the
 * connector sent, or an answer the double gave, against what Plaid publishes.
 *
 * The file is OpenAPI 3.0: its schemas are JSON Schema draft-04-like with OpenAPI's own keywords. Ajv
 * reads `nullable` beside a `type` natively (one beside `allOf`/`$ref`, as Plaid writes "this object or null", is
 * turned into `anyOf` with null); the boolean `exclusiveMinimum`/`exclusiveMaximum` of draft 4 are turned into
 * draft-07's numbers here (an upstream `exclusiveMinimum: false` means "inclusive", i.e. nothing to add).
 * Plaid's `x-*` extensions and `example`/`deprecated` annotations are not validation keywords (strict off).
 */
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

export const PLAID_OPENAPI_FILE = new URL('./2020-09-14.trimmed.json', import.meta.url);
const DOC_ID = 'plaid-openapi';

export type PlaidSchemaProblem = { path: string; message: string };

function toDraft7(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(toDraft7);
  if (!node || typeof node !== 'object') return;
  const schema = node as Record<string, unknown>;
  for (const [bound, limit] of [
    ['exclusiveMinimum', 'minimum'],
    ['exclusiveMaximum', 'maximum'],
  ] as const) {
    if (typeof schema[bound] !== 'boolean') continue;
    if (schema[bound] === true && typeof schema[limit] === 'number') {
      schema[bound] = schema[limit];
      delete schema[limit];
    } else delete schema[bound];
  }
  Object.values(schema).forEach(toDraft7);
  // OpenAPI 3.0's `nullable` needs a `type` beside it; Plaid also writes it beside `allOf`/`$ref` to mean "or null".
  if ('nullable' in schema && schema.type === undefined) {
    const nullable = schema.nullable === true;
    delete schema.nullable;
    if (nullable) {
      const rest = { ...schema };
      for (const key of Object.keys(schema)) delete schema[key];
      schema.anyOf = [rest, { type: 'null' }];
    }
  }
}

let loaded: { doc: OpenAPIV3.Document; ajv: Ajv; compiled: Map<string, ValidateFunction> } | undefined;

function load() {
  if (loaded) return loaded;
  const doc = JSON.parse(readFileSync(PLAID_OPENAPI_FILE, 'utf8')) as OpenAPIV3.Document;
  const components = structuredClone(doc.components ?? {});
  toDraft7(components);
  const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: true, validateSchema: false });
  addFormats(ajv);
  ajv.addSchema({ $id: DOC_ID, components }, DOC_ID);
  loaded = { doc, ajv, compiled: new Map() };
  return loaded;
}

function operation(path: string): OpenAPIV3.OperationObject {
  const op = load().doc.paths[path]?.post;
  if (!op) throw new Error(`the kept Plaid OpenAPI file has no POST ${path} (add it to KEPT_OPERATIONS and trim again)`);
  return op;
}

function refOf(schema: OpenAPIV3.ReferenceObject | OpenAPIV3.SchemaObject | undefined, what: string): string {
  if (!schema || !('$ref' in schema)) throw new Error(`${what} is not a reference to a component schema`);
  return schema.$ref;
}

function check(ref: string, value: unknown): PlaidSchemaProblem[] {
  const { ajv, compiled } = load();
  let validate = compiled.get(ref);
  if (!validate) {
    validate = ajv.compile({ $ref: `${DOC_ID}${ref}` });
    compiled.set(ref, validate);
  }
  if (validate(value)) return [];
  return (validate.errors ?? []).map((error: ErrorObject) => ({ path: error.instancePath || '/', message: `${error.message ?? 'invalid'}${error.params && Object.keys(error.params).length > 0 ? ` ${JSON.stringify(error.params)}` : ''}` }));
}

/** The component a request body of `path` must match (e.g. `#/components/schemas/TransactionsSyncRequest`). */
export function plaidRequestSchema(path: string): string {
  const body = operation(path).requestBody;
  if (!body || '$ref' in body) throw new Error(`POST ${path} declares no inline request body`);
  return refOf(body.content['application/json']?.schema, `POST ${path}'s request body`);
}

/** The component an answer of `path` with `status` must match: the 200 schema, else the `default` (PlaidError). */
export function plaidResponseSchema(path: string, status: number): string {
  const responses = operation(path).responses;
  const response = responses[String(status)] ?? (status === 200 ? undefined : responses.default);
  if (!response || '$ref' in response) throw new Error(`POST ${path} declares no answer for ${status}`);
  return refOf(response.content?.['application/json']?.schema, `POST ${path}'s ${status} answer`);
}

/** What is wrong with a request body sent to `path`, per Plaid's OpenAPI file (empty when it conforms). */
export function checkPlaidRequest(path: string, body: unknown): PlaidSchemaProblem[] {
  return check(plaidRequestSchema(path), body);
}

/** What is wrong with an answer of `path` with HTTP `status`, per Plaid's OpenAPI file (empty when it conforms). */
export function checkPlaidResponse(path: string, status: number, body: unknown): PlaidSchemaProblem[] {
  return check(plaidResponseSchema(path, status), body);
}

/** The headers Plaid's top-level `security` requirement names (all of one requirement object are needed). */
export function plaidSecurityHeaders(): string[] {
  const { doc } = load();
  const requirement = doc.security?.[0] ?? {};
  const schemes = doc.components?.securitySchemes ?? {};
  return Object.keys(requirement).map((name) => {
    const scheme = schemes[name];
    if (!scheme || '$ref' in scheme || scheme.type !== 'apiKey' || scheme.in !== 'header') throw new Error(`security scheme ${name} is not a header key`);
    return scheme.name;
  });
}

/** The operations the kept file describes. */
export function plaidOperations(): string[] {
  return Object.keys(load().doc.paths);
}

type SchemaNode = OpenAPIV3.ReferenceObject | OpenAPIV3.SchemaObject;

function resolve(node: SchemaNode): OpenAPIV3.SchemaObject {
  let current: SchemaNode = node;
  for (let hops = 0; '$ref' in current; hops += 1) {
    const name = /^#\/components\/schemas\/(.+)$/.exec(current.$ref)?.[1];
    const target = name ? load().doc.components?.schemas?.[name] : undefined;
    if (!target || hops > 32) throw new Error(`unresolvable reference ${current.$ref}`);
    current = target;
  }
  return current;
}

/** The properties a schema names, through `allOf` (Plaid composes some requests that way), and whether it admits others. */
function propertiesOf(node: SchemaNode): { properties: Map<string, SchemaNode>; open: boolean } {
  const schema = resolve(node);
  const properties = new Map<string, SchemaNode>(Object.entries(schema.properties ?? {}));
  let open = schema.additionalProperties !== undefined && schema.additionalProperties !== false;
  for (const part of schema.allOf ?? []) {
    const inner = propertiesOf(part);
    for (const [name, value] of inner.properties) properties.set(name, value);
    open ||= inner.open;
  }
  if (!schema.properties && !schema.allOf) open = true;
  return { properties, open };
}

function unknownFields(node: SchemaNode, value: unknown, prefix: string): string[] {
  if (Array.isArray(value)) {
    const schema = resolve(node);
    return schema.type === 'array' && schema.items ? value.flatMap((item) => unknownFields(schema.items as SchemaNode, item, prefix)) : [];
  }
  if (!value || typeof value !== 'object') return [];
  const { properties, open } = propertiesOf(node);
  return Object.entries(value).flatMap(([name, inner]) => {
    const property = properties.get(name);
    if (!property) return open ? [] : [`${prefix}${name}`];
    return unknownFields(property, inner, `${prefix}${name}.`);
  });
}

/**
 * The fields of a request body to `path` that its request schema does not name (dotted for nested ones),
 * which Plaid refuses with `UNKNOWN_FIELDS` (https://plaid.com/docs/errors/invalid-request/#unknown_fields).
 * Undefined when the file does not describe `path` (a route of the double's own).
 */
export function plaidUnknownFields(path: string, body: Record<string, unknown>): string[] | undefined {
  if (!load().doc.paths[path]?.post) return undefined;
  return unknownFields({ $ref: plaidRequestSchema(path) }, body, '');
}

/** Whether the kept file describes `POST path`. */
export function plaidDescribes(path: string): boolean {
  return Boolean(load().doc.paths[path]?.post);
}

/** The required fields a request body to `path` lacks (dotted), per its request schema. */
export function plaidMissingFields(problems: PlaidSchemaProblem[]): string[] {
  return problems.flatMap((problem) => {
    const missing = /^must have required property '([^']+)'/.exec(problem.message)?.[1];
    if (!missing) return [];
    const at = problem.path === '/' ? '' : `${problem.path.slice(1).replaceAll('/', '.')}.`;
    return [`${at}${missing}`];
  });
}

/** Compiles every request schema now (the largest, `/link/token/create`'s, takes a good part of a second), so no request waits on it. */
export function warmPlaidRequestSchemas(): void {
  for (const path of plaidOperations()) checkPlaidRequest(path, {});
}
