import { sql, type DatabasePool, type DatabaseTransactionConnection } from 'slonik';
import { z } from 'zod';
import { ValidationError } from '../errors/index.ts';
import { columnOf, findObject, isWritable, SQL_TYPES, type ObjectDef } from '../sectors/index.ts';
import { MANAGED_FIELDS, recordSchemaFor, type CacheRecord } from './cache-record-schema.ts';

export type UpsertInput = {
  /** Catalogue object name, e.g. `finance.transaction`. */
  object: string;
  connectionId: string;
  /** Provider kind, stored in `source`. */
  source: string;
  records: readonly unknown[];
};

type Connection = DatabasePool | DatabaseTransactionConnection;

function objectOrThrow(name: string): ObjectDef {
  const object = findObject(name);
  if (!object) throw new ValidationError(`unknown object '${name}'`);
  return object;
}

/** Validates records against the catalogue; the first bad one is reported with its index and field. */
export function parseRecords(object: ObjectDef, records: readonly unknown[]): CacheRecord[] {
  const schema = recordSchemaFor(object);
  return records.map((record, index) => {
    const parsed = schema.safeParse(record);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const path = issue?.path.join('.') || '(record)';
      throw new ValidationError(`${object.name} record ${index}: '${path}' ${issue?.message ?? 'is invalid'}`);
    }
    return parsed.data as CacheRecord;
  });
}

/**
 * Inserts or updates records of one object for one connection, in one statement. Idempotent on
 * (connection_id, source_id): re-sending a record updates it in place and keeps its gateway id.
 * Later records win when one batch names a source_id twice. Returns how many rows were written.
 */
export async function upsertRecords(db: Connection, input: UpsertInput): Promise<number> {
  const object = objectOrThrow(input.object);
  const parsed = parseRecords(object, input.records);
  if (parsed.length === 0) return 0;
  const latest = new Map(parsed.map((record) => [record.source_id, record]));
  const fields = object.fields.filter((fieldDef) => !MANAGED_FIELDS.has(fieldDef.name) && isWritable(fieldDef));
  const columns = fields.map((fieldDef) => sql.identifier([columnOf(fieldDef)]));
  const definitions = fields.map((fieldDef) => sql.fragment`${sql.identifier([columnOf(fieldDef)])} ${SQL_TYPES[fieldDef.type]}`);
  const updates = fields
    .filter((fieldDef) => fieldDef.name !== 'source_id')
    .map((fieldDef) => sql.fragment`${sql.identifier([columnOf(fieldDef)])} = EXCLUDED.${sql.identifier([columnOf(fieldDef)])}`);
  const rows = [...latest.values()].map((record) => Object.fromEntries(fields.map((f) => [columnOf(f), record[f.name] ?? null])));

  return db.oneFirst(sql.type(z.object({ written: z.number() }))`
    WITH written AS (
      INSERT INTO ${sql.identifier([object.table])} (connection_id, source, ${sql.join(columns, sql.fragment`, `)})
      SELECT ${input.connectionId}::uuid, ${input.source}, ${sql.join(columns, sql.fragment`, `)}
      FROM jsonb_to_recordset(${sql.jsonb(rows)}) AS incoming(${sql.join(definitions, sql.fragment`, `)})
      ON CONFLICT (connection_id, source_id) DO UPDATE
        SET ${sql.join(updates, sql.fragment`, `)}, synced_at = now()
      RETURNING 1
    )
    SELECT count(*)::int AS written FROM written`);
}

/** Removes records the source reports deleted. Returns how many were removed. */
export async function deleteRecords(
  db: Connection,
  input: { object: string; connectionId: string; sourceIds: readonly string[] },
): Promise<number> {
  const object = objectOrThrow(input.object);
  if (input.sourceIds.length === 0) return 0;
  return db.oneFirst(sql.type(z.object({ removed: z.number() }))`
    WITH removed AS (
      DELETE FROM ${sql.identifier([object.table])}
      WHERE connection_id = ${input.connectionId}::uuid AND source_id = ANY(${sql.array(input.sourceIds, 'text')})
      RETURNING 1
    )
    SELECT count(*)::int AS removed FROM removed`);
}
