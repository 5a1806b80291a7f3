import { z } from 'zod';
import type { FieldDef, FieldType, ObjectDef } from '../sectors/index.ts';

/** The columns the upsert path fills itself; a record never sets them. */
export const MANAGED_FIELDS = new Set(['id', 'connection_id', 'source', 'synced_at']);

const DECIMAL = /^-?\d+(\.\d+)?$/;

const instant = z
  .union([z.string(), z.date(), z.number()])
  .transform((value, context) => {
    const date = value instanceof Date ? value : new Date(value);
    if (Number.isNaN(date.getTime())) {
      context.addIssue({ code: 'custom', message: 'must be an ISO 8601 instant' });
      return z.NEVER;
    }
    return date.toISOString();
  });

const VALUE_SCHEMAS: Record<FieldType, z.ZodType> = {
  string: z.string().max(100_000),
  uuid: z.uuid(),
  integer: z.number().int(),
  number: z.number().finite(),
  decimal: z
    .union([z.string().regex(DECIMAL, 'must be a decimal number'), z.number().finite()])
    .transform((value) => (typeof value === 'number' ? String(value) : value)),
  boolean: z.boolean(),
  timestamp: instant,
  date: z.iso.date(),
  'string[]': z.array(z.string()),
  json: z.unknown(),
};

function valueSchema(fieldDef: FieldDef): z.ZodType {
  const base = VALUE_SCHEMAS[fieldDef.type];
  if (fieldDef.nullable) return base.nullish();
  return fieldDef.defaultValue === undefined ? base : base.nullish().transform((value) => value ?? fieldDef.defaultValue);
}

/**
 * The shape a connector (or push-ingest, or the demo seed) hands to the upsert path for one object:
 * `source_id` plus any catalogue field; unknown keys are dropped, managed columns cannot be set.
 */
export function recordSchemaFor(object: ObjectDef) {
  const shape: Record<string, z.ZodType> = {};
  for (const fieldDef of object.fields) {
    if (MANAGED_FIELDS.has(fieldDef.name)) continue;
    shape[fieldDef.name] = fieldDef.name === 'source_id' ? z.string().min(1).max(512) : valueSchema(fieldDef);
  }
  return z.object(shape).strip();
}

export type CacheRecord = { source_id: string } & Record<string, unknown>;
