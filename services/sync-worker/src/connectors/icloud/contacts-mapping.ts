import ICAL from 'ical.js';

type Typed = { type: string | null; value: string };

/** The first TYPE that says what kind of address it is (not `pref`, `internet` or `voice`). */
function typeOf(property: ICAL.Property): string | null {
  const raw = property.getParameter('type');
  const types = (Array.isArray(raw) ? raw : raw === undefined || raw === null ? [] : [raw]).flatMap((value) => String(value).split(',')).map((value) => value.trim().toLowerCase());
  return types.find((value) => !['pref', 'internet', 'voice'].includes(value)) ?? null;
}

function stringValue(property: ICAL.Property): string {
  const value = property.getFirstValue();
  return typeof value === 'string' ? value : value === null || value === undefined ? '' : String(value as unknown);
}

function typed(card: ICAL.Component, name: string, clean: (value: string) => string): Typed[] {
  return card
    .getAllProperties(name)
    .map((property) => ({ type: typeOf(property), value: clean(stringValue(property)) }))
    .filter((entry) => entry.value !== '');
}

function parts(card: ICAL.Component, name: string): string[] {
  const value = card.getFirstPropertyValue(name);
  if (Array.isArray(value)) return value.map((part) => (Array.isArray(part) ? part.join(' ') : String(part)));
  return typeof value === 'string' ? [value] : [];
}

const nonEmpty = (value: string | undefined) => (value === undefined || value.trim() === '' ? null : value.trim());

/**
 * BDAY as a local date. vCard 4.0 writes a date without a year as `--MMDD` (`--04-12` once parsed); the
 * catalogue keeps it with the year 1604, Apple's placeholder for an unknown year.
 */
function birthday(card: ICAL.Component): string | null {
  const raw = card.getFirstProperty('bday');
  if (!raw) return null;
  const value = stringValue(raw);
  const full = /^(\d{4})-?(\d{2})-?(\d{2})/.exec(value);
  if (full) return `${full[1]}-${full[2]}-${full[3]}`;
  const noYear = /^--(\d{2})-?(\d{2})/.exec(value);
  return noYear ? `1604-${noYear[1]}-${noYear[2]}` : null;
}

function revision(card: ICAL.Component): string | null {
  const raw = card.getFirstProperty('rev');
  if (!raw) return null;
  const value = stringValue(raw);
  const match = /^(\d{4})-?(\d{2})-?(\d{2})T(\d{2}):?(\d{2}):?(\d{2})Z$/.exec(value);
  return match ? `${match[1]}-${match[2]}-${match[3]}T${match[4]}:${match[5]}:${match[6]}Z` : null;
}

function address(property: ICAL.Property): { type: string | null; street: string; city: string; region: string; postal_code: string; country: string } {
  const value = property.getFirstValue();
  const field = (index: number) => {
    const part = Array.isArray(value) ? (value as unknown[])[index] : undefined;
    return (Array.isArray(part) ? part.join(' ') : typeof part === 'string' ? part : '').trim();
  };
  return { type: typeOf(property), street: field(2), city: field(3), region: field(4), postal_code: field(5), country: field(6) };
}

/** A vCard 3.0 or 4.0 as a `contacts.contact` record, or null for what is not a person (Apple's group cards). */
export function contactRecord(sourceId: string, vcard: string): Record<string, unknown> | null {
  const card = new ICAL.Component(ICAL.parse(vcard));
  const kind = String(card.getFirstPropertyValue('x-addressbookserver-kind') ?? card.getFirstPropertyValue('kind') ?? 'individual').toLowerCase();
  if (kind === 'group') return null;
  const [family, given] = parts(card, 'n');
  const [organization] = parts(card, 'org');
  return {
    source_id: sourceId,
    display_name: nonEmpty(String(card.getFirstPropertyValue('fn') ?? '')) ?? nonEmpty([given, family].filter(Boolean).join(' ')),
    given_name: nonEmpty(given),
    family_name: nonEmpty(family),
    organization: nonEmpty(organization),
    title: nonEmpty(String(card.getFirstPropertyValue('title') ?? '')),
    emails: typed(card, 'email', (value) => value.trim().replace(/^mailto:/i, '')),
    phones: typed(card, 'tel', (value) => value.trim().replace(/^tel:/i, '')),
    addresses: card.getAllProperties('adr').map(address),
    birthday: birthday(card),
    updated_at: revision(card),
  };
}
