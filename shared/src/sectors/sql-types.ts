import { sql } from 'slonik';
import type { FieldType } from './catalogue-types.ts';

/** The Postgres type of each catalogue field type, as a fragment for casts and recordset definitions. */
export const SQL_TYPES: Record<FieldType, ReturnType<typeof sql.fragment>> = {
  string: sql.fragment`text`,
  uuid: sql.fragment`uuid`,
  integer: sql.fragment`integer`,
  number: sql.fragment`double precision`,
  decimal: sql.fragment`numeric`,
  boolean: sql.fragment`boolean`,
  timestamp: sql.fragment`timestamptz`,
  date: sql.fragment`date`,
  'string[]': sql.fragment`text[]`,
  json: sql.fragment`jsonb`,
};

/** Element type names for `sql.array(values, name)` of scalar field types. */
export const ARRAY_ELEMENT_TYPES: Partial<Record<FieldType, string>> = {
  string: 'text',
  uuid: 'uuid',
  integer: 'int4',
  number: 'float8',
  decimal: 'numeric',
  boolean: 'bool',
  timestamp: 'timestamptz',
  date: 'date',
};
