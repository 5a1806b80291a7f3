import { z } from 'zod';
import { isWritable, type FieldDef, type FieldType, type ObjectDef } from '../sectors/index.ts';
import { PgDateSchema, PgInstantSchema, PgIntegerSchema, PgJsonSchema, pgText } from '../validation/index.ts';

/** The columns the upsert path fills itself; a record never sets them. */
export const MANAGED_FIELDS = new Set(['id', 'connection_id', 'source', 'synced_at']);

const DECIMAL = /^-?\d+(\.\d+)?$/;

/** Every value is one its column can hold, so one bad value is refused here and never fails a batch's statement. */
const VALUE_SCHEMAS: Record<FieldType, z.ZodType> = {
  string: pgText(z.string().max(100_000)),
  uuid: z.uuid(),
  integer: PgIntegerSchema,
  number: z.number().finite(),
  decimal: z
    .union([z.string().max(1000).regex(DECIMAL, 'must be a decimal number'), z.number().finite()])
    .transform((value) => (typeof value === 'number' ? String(value) : value)),
  boolean: z.boolean(),
  timestamp: PgInstantSchema,
  date: PgDateSchema,
  'string[]': z.array(pgText(z.string())),
  json: PgJsonSchema,
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
    if (MANAGED_FIELDS.has(fieldDef.name) || !isWritable(fieldDef)) continue;
    shape[fieldDef.name] = fieldDef.name === 'source_id' ? pgText(z.string().min(1).max(512)) : valueSchema(fieldDef);
  }
  return z.object(shape).strip();
}

export type CacheRecord = { source_id: string } & Record<string, unknown>;
