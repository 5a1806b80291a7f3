import { z } from 'zod';
import type { ActionDef } from '@pcg/shared/live';
import { LiveRequestError } from '../kit/source-errors.ts';

/** One entity state as the hub serves it (§9.3); unknown keys are kept out. */
export const HaStateSchema = z.object({
  entity_id: z.string(),
  state: z.string(),
  attributes: z.record(z.string(), z.unknown()).default({}),
  last_changed: z.string().optional(),
  last_updated: z.string().optional(),
});
export type HaStateRow = z.infer<typeof HaStateSchema>;

const ENTITY_ID = /^[a-z0-9_]+\.[a-z0-9_]+$/;
const NAME_PART = /^[a-z0-9_]+$/;

/** A `home.entity` record for the cache (and for live rows): the entity id is the source id. */
export function entityRecord(state: HaStateRow) {
  return {
    source_id: state.entity_id,
    entity_id: state.entity_id,
    domain: state.entity_id.split('.')[0] ?? '',
    friendly_name: typeof state.attributes.friendly_name === 'string' ? state.attributes.friendly_name : null,
    state: state.state,
    attributes: state.attributes,
    last_changed: state.last_changed ?? null,
    last_updated: state.last_updated ?? null,
  };
}
export type EntityRecord = ReturnType<typeof entityRecord>;

/** Parses a states array, dropping (and counting) rows that are not entity states. */
export function parseStates(raw: unknown): { states: HaStateRow[]; dropped: number } {
  if (!Array.isArray(raw)) throw new TypeError('states is not an array');
  const states: HaStateRow[] = [];
  for (const item of raw) {
    const parsed = HaStateSchema.safeParse(item);
    if (parsed.success && ENTITY_ID.test(parsed.data.entity_id)) states.push(parsed.data);
  }
  return { states, dropped: raw.length - states.length };
}

const FieldSchema = z.looseObject({
  name: z.string().optional(),
  description: z.string().optional(),
  example: z.unknown().optional(),
  default: z.unknown().optional(),
  required: z.boolean().optional(),
  selector: z.record(z.string(), z.unknown().nullable()).optional(),
  fields: z.record(z.string(), z.unknown()).optional(),
});
const ServiceSchema = z.looseObject({
  name: z.string().optional(),
  description: z.string().optional(),
  fields: z.record(z.string(), z.unknown()).default({}),
  target: z.unknown().optional(),
  response: z.object({ optional: z.boolean() }).optional(),
});
const CatalogueSchema = z.array(z.object({ domain: z.string(), services: z.record(z.string(), z.unknown()) }));

type JsonSchema = Record<string, unknown>;

/** JSON Schema for one service field, from its selector (§9.4). Unknown selectors accept any value. */
function fieldSchema(field: z.infer<typeof FieldSchema>): JsonSchema {
  const [kind, config] = Object.entries(field.selector ?? {})[0] ?? [];
  const options = (config ?? {}) as Record<string, unknown>;
  let schema: JsonSchema = {};
  if (kind === 'number') {
    schema = { type: 'number' };
    if (typeof options.min === 'number') schema.minimum = options.min;
    if (typeof options.max === 'number') schema.maximum = options.max;
  } else if (kind === 'boolean') schema = { type: 'boolean' };
  else if (kind === 'text' || kind === 'time' || kind === 'date' || kind === 'datetime' || kind === 'entity') schema = { type: 'string' };
  else if (kind === 'select' && Array.isArray(options.options)) {
    schema = { enum: options.options.map((option) => (option && typeof option === 'object' ? (option as { value?: unknown }).value : option)) };
  } else if (kind === 'object') schema = { type: 'object' };
  else if (kind === 'color_rgb') schema = { type: 'array', items: { type: 'integer', minimum: 0, maximum: 255 }, minItems: 3, maxItems: 3 };
  const about = [field.name, field.description].filter(Boolean).join(': ');
  if (about) schema.description = about;
  if (field.example !== undefined) schema.examples = [field.example];
  if (field.default !== undefined) schema.default = field.default;
  return schema;
}

/** Flattens sectioned fields (newer hubs group advanced fields in collapsible sections). */
function flatFields(fields: Record<string, unknown>): Array<[string, z.infer<typeof FieldSchema>]> {
  return Object.entries(fields).flatMap(([key, raw]) => {
    const field = FieldSchema.safeParse(raw);
    if (!field.success) return [];
    if (field.data.fields && !field.data.selector) return flatFields(field.data.fields);
    return [[key, field.data] as [string, z.infer<typeof FieldSchema>]];
  });
}

function targetDomains(target: unknown): string[] {
  const entity = (target as { entity?: unknown } | undefined)?.entity;
  const list = Array.isArray(entity) ? entity : entity ? [entity] : [];
  return list.flatMap((item) => ((item as { domain?: unknown }).domain as string[] | undefined) ?? []).filter((domain) => typeof domain === 'string');
}

/**
 * The hub's service catalogue as actions named `home.<domain>.<service>` (spec 4.2), each with a JSON
 * Schema of its data, plus the services that answer with data (called with `?return_response`).
 */
export function actionsFromServices(raw: unknown): { actions: ActionDef[]; responding: string[] } {
  const catalogue = CatalogueSchema.parse(raw);
  const actions: ActionDef[] = [];
  const responding: string[] = [];
  for (const { domain, services } of catalogue) {
    if (!NAME_PART.test(domain)) continue;
    for (const [service, rawService] of Object.entries(services)) {
      const parsed = ServiceSchema.safeParse(rawService);
      if (!NAME_PART.test(service) || !parsed.success) continue;
      const definition = parsed.data;
      const properties: Record<string, JsonSchema> = {};
      const required: string[] = [];
      if (definition.target !== undefined) {
        const domains = targetDomains(definition.target);
        properties.entity_id = {
          description: `Entity id, or a list of them, to act on${domains.length ? ` (domain ${domains.join(', ')})` : ''}.`,
          anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }],
        };
      }
      for (const [key, field] of flatFields(definition.fields)) {
        properties[key] = fieldSchema(field);
        if (field.required) required.push(key);
      }
      if (definition.response) responding.push(`${domain}.${service}`);
      const description = definition.description || definition.name || `${domain}.${service}`;
      actions.push({
        name: `home.${domain}.${service}`,
        sector: 'home',
        description: definition.response ? `${description} Answers with data.` : description,
        input_schema: { type: 'object', properties, ...(required.length ? { required } : {}), additionalProperties: false },
      });
    }
  }
  actions.sort((a, b) => a.name.localeCompare(b.name));
  return { actions, responding };
}

/** `home.<domain>.<service>` → its parts, or undefined when the name is not of that form. */
export function parseActionName(name: string): { domain: string; service: string } | undefined {
  const match = /^home\.([a-z0-9_]+)\.([a-z0-9_]+)$/.exec(name);
  return match ? { domain: match[1] ?? '', service: match[2] ?? '' } : undefined;
}

const FILTERABLE = new Set(['source_id', 'entity_id', 'domain', 'friendly_name', 'state', 'last_changed', 'last_updated']);

/** Applies a `fetch_live` where-list to live rows; only text comparisons make sense on live states. */
export function filterLiveRows(rows: EntityRecord[], where: ReadonlyArray<{ field: string; op: string; value?: unknown }>): EntityRecord[] {
  const tests = where.map(({ field, op, value }) => {
    if (!FILTERABLE.has(field)) throw new LiveRequestError(`fetch_live on home.entity cannot filter on '${field}'; use one of ${[...FILTERABLE].join(', ')}`);
    const read = (row: EntityRecord) => (row as Record<string, unknown>)[field] as string | null;
    const list = Array.isArray(value) ? value.map(String) : [];
    switch (op) {
      case 'eq': return (row: EntityRecord) => read(row) === String(value);
      case 'ne': return (row: EntityRecord) => read(row) !== String(value);
      case 'in': return (row: EntityRecord) => list.includes(read(row) ?? '');
      case 'not_in': return (row: EntityRecord) => !list.includes(read(row) ?? '');
      case 'contains': return (row: EntityRecord) => (read(row) ?? '').toLowerCase().includes(String(value).toLowerCase());
      case 'starts_with': return (row: EntityRecord) => (read(row) ?? '').startsWith(String(value));
      case 'is_null': return (row: EntityRecord) => (read(row) === null) === (value !== false);
      default:
        throw new LiveRequestError(`fetch_live on home.entity supports eq, ne, in, not_in, contains, starts_with and is_null, not '${op}'`);
    }
  });
  return rows.filter((row) => tests.every((test) => test(row)));
}
