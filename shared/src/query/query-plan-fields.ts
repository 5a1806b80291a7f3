import { findField, type FieldDef, type ObjectDef } from '../sectors/index.ts';
import { QueryError } from './query-errors.ts';

/** What the plans of a page and of groups share: the order they read in, and how they name a field. */
export type OrderPlan = { field: FieldDef; direction: 'asc' | 'desc' };

function names(fields: readonly FieldDef[]): string {
  return fields.map((fieldDef) => fieldDef.name).join(', ');
}

/** The catalogue field `name` of `object`, refused unless `usable`; a refusal lists the usable (`what`) fields. */
export function fieldOf(object: ObjectDef, name: string, where: string, usable: (fieldDef: FieldDef) => boolean, what: string): FieldDef {
  const fieldDef = findField(object, name);
  const valid = object.fields.filter(usable);
  if (!fieldDef) throw new QueryError(`${where}: unknown field '${name}' on ${object.name}; ${what} fields: ${names(valid)}`);
  if (!usable(fieldDef)) throw new QueryError(`${where}: field '${name}' cannot be used here; ${what} fields: ${names(valid)}`);
  return fieldDef;
}
