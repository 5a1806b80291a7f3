import { sql } from 'slonik';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { useTestEnvironment } from '@pcg/testkit/testing';
import { CATALOGUE, columnOf } from './catalogue.ts';
import type { FieldType } from './catalogue-types.ts';
import { SECTORS } from './sector-names.ts';

const testEnv = useTestEnvironment();

const SQL_TYPE: Record<FieldType, string> = {
  string: 'text',
  uuid: 'uuid',
  integer: 'integer',
  number: 'double precision',
  decimal: 'numeric',
  boolean: 'boolean',
  timestamp: 'timestamp with time zone',
  date: 'date',
  'string[]': 'ARRAY',
  json: 'jsonb',
};

const ColumnRow = z.object({ column_name: z.string(), data_type: z.string(), is_nullable: z.string(), is_generated: z.string() });

describe('sector catalogue', () => {
  it('names the ten objects of design 4.2, each in one of the six sectors', () => {
    expect(CATALOGUE.map((object) => object.name)).toEqual([
      'finance.account', 'finance.transaction', 'finance.holding',
      'health.sample', 'health.workout', 'health.sleep_session',
      'mail.message', 'contacts.contact', 'calendar.event', 'home.entity',
    ]);
    for (const object of CATALOGUE) {
      expect(SECTORS).toContain(object.sector);
      expect(object.name.startsWith(`${object.sector}.`)).toBe(true);
    }
  });

  it.each(CATALOGUE.map((object) => [object.name, object] as const))('agrees with the migrated table of %s, column by column', async (_name, object) => {
    const columns = await testEnv.db.many(sql.type(ColumnRow)`
      SELECT column_name, data_type, is_nullable, is_generated FROM information_schema.columns
      WHERE table_schema = 'public' AND table_name = ${object.table} ORDER BY ordinal_position`);
    const stored = object.fields.filter((fieldDef) => !fieldDef.computed);
    expect(stored.map(columnOf)).toEqual(columns.map((column) => column.column_name).filter((name) => !object.internalColumns?.includes(name)));
    for (const fieldDef of stored) {
      const column = columns.find((candidate) => candidate.column_name === columnOf(fieldDef));
      expect({ field: fieldDef.name, type: SQL_TYPE[fieldDef.type], nullable: fieldDef.nullable, generated: fieldDef.generated === true }).toEqual({
        field: fieldDef.name,
        type: column?.data_type,
        nullable: column?.is_nullable === 'YES',
        generated: column?.is_generated === 'ALWAYS',
      });
    }
  });

  it.each(CATALOGUE.map((object) => [object.name, object] as const))('documents every field and trap of %s', (_name, object) => {
    expect(object.description.length).toBeGreaterThan(10);
    expect(object.notes.length).toBeGreaterThan(0);
    for (const fieldDef of object.fields) expect(fieldDef.description.length).toBeGreaterThan(5);
    for (const documented of Object.keys(object.fieldDocs)) expect(object.fields.map((f) => f.name)).toContain(documented);
    for (const order of object.defaultOrder) expect(object.fields.find((f) => f.name === order.field)?.sortable).toBe(true);
  });

  it('names the traps agents trip on', () => {
    const text = JSON.stringify(CATALOGUE);
    expect(text).toMatch(/negative.*money leaves/i);
    expect(text).toMatch(/kJ/);
    expect(text).toMatch(/milliseconds/);
    expect(text).toMatch(/UTC/);
    expect(text).toMatch(/all-day/);
    expect(text).toMatch(/never cached/i);
  });
});
