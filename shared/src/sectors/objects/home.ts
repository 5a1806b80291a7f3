import { commonFields, field, type ObjectDef } from '../catalogue-types.ts';

export const homeEntity: ObjectDef = {
  name: 'home.entity',
  sector: 'home',
  table: 'home_entities',
  description: 'The last known state of one smart-home device or entity.',
  fields: [
    ...commonFields(),
    field('entity_id', 'string', 'Hub entity id, e.g. light.kitchen.', { nullable: false }),
    field('domain', 'string', 'Entity domain, e.g. light, switch, sensor, climate.', { nullable: false, categorical: true }),
    field('friendly_name', 'string', 'Human name of the entity.'),
    field('state', 'string', 'State as text: "on", "off", "21.5", "unavailable", …'),
    field('attributes', 'json', 'Domain-specific attributes (brightness, unit_of_measurement, …).', { defaultValue: {} }),
    field('last_changed', 'timestamp', 'When the state last changed (UTC).'),
    field('last_updated', 'timestamp', 'When the state or attributes last changed (UTC).'),
  ],
  notes: [
    'state is always text, even for numeric sensors; its unit is attributes.unit_of_measurement.',
    'This is the cached state as of synced_at.',
    'Actions on these entities are listed by list_actions as home.<domain>.<service>.',
  ],
  fieldDocs: {
    state: 'Text; "unavailable" and "unknown" are possible for any entity.',
    last_changed: 'UTC; unchanged when only attributes change (see last_updated).',
  },
  defaultOrder: [{ field: 'entity_id', direction: 'asc' }],
};
