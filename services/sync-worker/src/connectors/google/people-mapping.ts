import { z } from 'zod';

const withPrimary = { metadata: z.looseObject({ primary: z.boolean().optional() }).optional() };
export const GooglePersonSchema = z.looseObject({
  resourceName: z.string().min(1),
  metadata: z.looseObject({ deleted: z.boolean().optional(), sources: z.array(z.looseObject({ updateTime: z.string().optional() })).optional() }).optional(),
  names: z.array(z.looseObject({ displayName: z.string().optional(), givenName: z.string().optional(), familyName: z.string().optional(), ...withPrimary })).optional(),
  emailAddresses: z.array(z.looseObject({ value: z.string().optional(), type: z.string().optional(), ...withPrimary })).optional(),
  phoneNumbers: z.array(z.looseObject({ value: z.string().optional(), canonicalForm: z.string().optional(), type: z.string().optional(), ...withPrimary })).optional(),
  organizations: z.array(z.looseObject({ name: z.string().optional(), title: z.string().optional(), ...withPrimary })).optional(),
  birthdays: z.array(z.looseObject({ date: z.looseObject({ year: z.number().int().optional(), month: z.number().int().optional(), day: z.number().int().optional() }).optional(), ...withPrimary })).optional(),
});
export type GooglePerson = z.infer<typeof GooglePersonSchema>;

/** The primary value of a People field, else the first. */
function primary<T extends { metadata?: { primary?: boolean } }>(values: readonly T[] | undefined): T | undefined {
  return values?.find((value) => value.metadata?.primary === true) ?? values?.[0];
}

const pad = (value: number) => String(value).padStart(2, '0');
/** A birthday as a local date; an unknown year (0 or absent) is the catalogue's 1604. */
function birthday(person: GooglePerson): string | null {
  const date = primary(person.birthdays)?.date;
  if (!date?.month || !date.day) return null;
  return `${date.year ? String(date.year).padStart(4, '0') : '1604'}-${pad(date.month)}-${pad(date.day)}`;
}

/** `contacts.contact` of one person; a phone number keeps its E.164 form when Google gives one. */
export function contactRecord(person: GooglePerson) {
  const name = primary(person.names);
  const organization = primary(person.organizations);
  const updated = person.metadata?.sources?.map((source) => source.updateTime).filter((value): value is string => !!value && !Number.isNaN(Date.parse(value))).sort().at(-1);
  return {
    source_id: person.resourceName,
    display_name: name?.displayName ?? ([name?.givenName, name?.familyName].filter(Boolean).join(' ') || null),
    given_name: name?.givenName ?? null,
    family_name: name?.familyName ?? null,
    organization: organization?.name ?? null,
    title: organization?.title ?? null,
    emails: (person.emailAddresses ?? []).flatMap((email) => (email.value ? [{ type: email.type ?? null, value: email.value }] : [])),
    phones: (person.phoneNumbers ?? []).flatMap((phone) => (phone.value ? [{ type: phone.type ?? null, value: phone.canonicalForm ?? phone.value }] : [])),
    birthday: birthday(person),
    updated_at: updated ? new Date(updated).toISOString() : null,
  };
}
