import type { FieldDef, ObjectDef } from './catalogue-types.ts';
import { financeAccount, financeHolding, financeTransaction } from './objects/finance.ts';
import { healthSample, healthSleepSession, healthWorkout } from './objects/health.ts';
import { mailMessage } from './objects/mail.ts';
import { contactsContact } from './objects/contacts.ts';
import { calendarEvent } from './objects/calendar.ts';
import { homeEntity } from './objects/home.ts';
import type { Sector } from './sector-names.ts';
import { PAGE_BUDGET_CHARS } from '../query/query-budget.ts';

/** Said on every object: a page is capped by size too, and `select` is how to fit more rows in one. */
export const SELECT_NOTE = `Pages hold at most limit rows and at most ${PAGE_BUDGET_CHARS} characters; name only the fields you need with select (id always comes) to get more rows per page.`;

/** The ten objects agents read (design 4.2): the one place that names objects, fields, notes and fieldDocs. */
export const CATALOGUE: readonly ObjectDef[] = ([
  financeAccount,
  financeTransaction,
  financeHolding,
  healthSample,
  healthWorkout,
  healthSleepSession,
  mailMessage,
  contactsContact,
  calendarEvent,
  homeEntity,
] satisfies ObjectDef[]).map((object) => ({ ...object, notes: [...object.notes, SELECT_NOTE] }));

const byName = new Map(CATALOGUE.map((object) => [object.name, object]));

export const OBJECT_NAMES: readonly string[] = CATALOGUE.map((object) => object.name);

export function findObject(name: string): ObjectDef | undefined {
  return byName.get(name);
}

export function objectsOfSector(sector: Sector): ObjectDef[] {
  return CATALOGUE.filter((object) => object.sector === sector);
}

export function findField(object: ObjectDef, name: string): FieldDef | undefined {
  return object.fields.find((candidate) => candidate.name === name);
}

export function columnOf(fieldDef: FieldDef): string {
  return fieldDef.column ?? fieldDef.name;
}
