import { commonFields, field, type ObjectDef } from '../catalogue-types.ts';

export const contactsContact: ObjectDef = {
  name: 'contacts.contact',
  sector: 'contacts',
  table: 'contacts_entries',
  description: 'One address-book entry from one source.',
  fields: [
    ...commonFields(),
    field('display_name', 'string', 'Name as shown in the address book.'),
    field('given_name', 'string', 'Given (first) name.'),
    field('family_name', 'string', 'Family (last) name.'),
    field('organization', 'string', 'Company or organization.'),
    field('title', 'string', 'Job title.'),
    field('emails', 'json', 'List of {type, value} email addresses.'),
    field('phones', 'json', 'List of {type, value} phone numbers.'),
    field('addresses', 'json', 'List of postal addresses.'),
    field('birthday', 'date', 'Birthday (local date); the year may be 1604 when the source does not know it.'),
    field('updated_at', 'timestamp', 'When the source last changed the entry (UTC).'),
  ],
  notes: [
    'The same person can appear once per source; entries are not merged across sources.',
    'emails, phones and addresses are lists and cannot be filtered; read them from the rows.',
  ],
  fieldDocs: {
    birthday: 'A date without time zone; the year 1604 means the year is unknown.',
  },
  defaultOrder: [{ field: 'display_name', direction: 'asc' }],
};
