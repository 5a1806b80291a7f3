/** Shapes of the Home Assistant REST API (reference/providers.md §9.3, §9.4). */
export type HaState = {
  entity_id: string;
  state: string;
  attributes: Record<string, unknown>;
  last_changed: string;
  last_updated: string;
  context: { id: string; parent_id: string | null; user_id: string | null };
};

export type HaSelector = Record<string, Record<string, unknown> | null>;

export type HaServiceField = {
  name?: string;
  description?: string;
  example?: unknown;
  default?: unknown;
  required?: boolean;
  advanced?: boolean;
  selector?: HaSelector;
};

export type HaService = {
  name?: string;
  description?: string;
  fields: Record<string, HaServiceField>;
  target?: { entity?: Array<{ domain?: string[] }> };
  /** Present when the service can return data; `optional: false` means it only answers with a response. */
  response?: { optional: boolean };
};

export type HaDomainServices = { domain: string; services: Record<string, HaService> };

export type SeedEntity = { entity_id: string; state: string; attributes?: Record<string, unknown>; changedAt?: string };

/** A small home: lights, a switch, sensors, a thermostat, a lock and the weather. */
export const DEMO_ENTITIES: readonly SeedEntity[] = [
  { entity_id: 'light.kitchen', state: 'on', attributes: { friendly_name: 'Kitchen light', brightness: 180, supported_color_modes: ['brightness'] } },
  { entity_id: 'light.living_room', state: 'off', attributes: { friendly_name: 'Living room light', supported_color_modes: ['brightness'] } },
  { entity_id: 'switch.coffee_maker', state: 'off', attributes: { friendly_name: 'Coffee maker' } },
  { entity_id: 'sensor.kitchen_temperature', state: '21.5', attributes: { friendly_name: 'Kitchen temperature', unit_of_measurement: '°C', device_class: 'temperature', state_class: 'measurement' } },
  { entity_id: 'sensor.outdoor_humidity', state: '64', attributes: { friendly_name: 'Outdoor humidity', unit_of_measurement: '%', device_class: 'humidity' } },
  { entity_id: 'binary_sensor.front_door_contact', state: 'off', attributes: { friendly_name: 'Front door', device_class: 'door' } },
  { entity_id: 'climate.living_room', state: 'heat', attributes: { friendly_name: 'Living room thermostat', temperature: 20, current_temperature: 19.5, hvac_modes: ['off', 'heat', 'auto'], min_temp: 7, max_temp: 35 } },
  { entity_id: 'lock.front_door', state: 'locked', attributes: { friendly_name: 'Front door lock' } },
  { entity_id: 'weather.home', state: 'cloudy', attributes: { friendly_name: 'Home', temperature: 12, temperature_unit: '°C' } },
];

const entityTarget = (domain: string) => ({ entity: [{ domain: [domain] }] });
const onOff = (domain: string, what: string): Record<string, HaService> => ({
  turn_on: { name: 'Turn on', description: `Turns on the ${what}.`, fields: {}, target: entityTarget(domain) },
  turn_off: { name: 'Turn off', description: `Turns off the ${what}.`, fields: {}, target: entityTarget(domain) },
  toggle: { name: 'Toggle', description: `Toggles the ${what}.`, fields: {}, target: entityTarget(domain) },
});

/** The service catalogue, object-shaped as `GET /api/services` really answers. */
export const DEMO_SERVICES: readonly HaDomainServices[] = [
  {
    domain: 'light',
    services: {
      ...onOff('light', 'light'),
      turn_on: {
        name: 'Turn on',
        description: 'Turns on one or more lights and adjusts their properties.',
        target: entityTarget('light'),
        fields: {
          brightness: { name: 'Brightness value', description: 'Brightness, 0 to 255.', selector: { number: { min: 0, max: 255, step: 1 } } },
          transition: { name: 'Transition', description: 'Seconds to fade.', selector: { number: { min: 0, max: 300, unit_of_measurement: 's' } }, advanced: true },
        },
      },
    },
  },
  { domain: 'switch', services: onOff('switch', 'switch') },
  {
    domain: 'climate',
    services: {
      set_temperature: {
        name: 'Set target temperature',
        description: 'Sets the temperature setpoint.',
        target: entityTarget('climate'),
        fields: { temperature: { name: 'Target temperature', required: true, selector: { number: { min: 7, max: 35, step: 0.5, unit_of_measurement: '°C' } } } },
      },
      set_hvac_mode: {
        name: 'Set HVAC mode',
        description: 'Sets HVAC operation mode.',
        target: entityTarget('climate'),
        fields: { hvac_mode: { name: 'HVAC mode', required: true, selector: { select: { options: ['off', 'heat', 'auto'] } } } },
      },
    },
  },
  {
    domain: 'lock',
    services: {
      lock: { name: 'Lock', description: 'Locks a lock.', fields: {}, target: entityTarget('lock') },
      unlock: { name: 'Unlock', description: 'Unlocks a lock.', fields: { code: { name: 'Code', selector: { text: null } } }, target: entityTarget('lock') },
    },
  },
  {
    domain: 'weather',
    services: {
      get_forecasts: {
        name: 'Get forecasts',
        description: 'Get weather forecasts.',
        target: entityTarget('weather'),
        fields: { type: { name: 'Forecast type', required: true, selector: { select: { options: ['daily', 'hourly', 'twice_daily'] } } } },
        response: { optional: false },
      },
    },
  },
];
