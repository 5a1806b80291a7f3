import { createRandom, isoInstant } from './random.ts';

const ROOMS = ['kitchen', 'living_room', 'bedroom', 'office', 'hallway', 'bathroom', 'garage', 'porch'];

/** Forty hub entities across lights, switches, sensors, climate and locks. */
export function homeData(end: number) {
  const random = createRandom(606);
  const entities: Array<Record<string, unknown>> = [];
  const add = (entityId: string, friendly: string, state: string, attributes: Record<string, unknown>) => {
    const changed = end - random.int(60, 86_400) * 1000;
    entities.push({ source_id: entityId, entity_id: entityId, domain: entityId.split('.')[0], friendly_name: friendly, state, attributes: { friendly_name: friendly, ...attributes }, last_changed: isoInstant(changed), last_updated: isoInstant(changed + random.int(0, 600) * 1000) });
  };
  for (const room of ROOMS) {
    const name = room.replace('_', ' ');
    add(`light.${room}`, `${name} light`, random.chance(0.4) ? 'on' : 'off', { brightness: random.int(30, 255), supported_color_modes: ['brightness'] });
    add(`sensor.${room}_temperature`, `${name} temperature`, random.normal(21, 1.2).toFixed(1), { unit_of_measurement: '°C', device_class: 'temperature' });
    add(`binary_sensor.${room}_motion`, `${name} motion`, random.chance(0.2) ? 'on' : 'off', { device_class: 'motion' });
  }
  for (const [i, name] of ['coffee maker', 'tv', 'fan', 'printer', 'dehumidifier', 'aquarium pump', 'heated blanket', 'garden lights'].entries()) {
    add(`switch.${name.replaceAll(' ', '_')}`, name, i % 3 === 0 ? 'on' : 'off', {});
  }
  add('climate.thermostat', 'Thermostat', 'heat', { current_temperature: 20.5, temperature: 21, hvac_modes: ['off', 'heat', 'cool', 'auto'] });
  add('lock.front_door', 'Front door', 'locked', {});
  add('lock.back_door', 'Back door', 'locked', {});
  add('sensor.power_consumption', 'Power consumption', String(random.int(180, 900)), { unit_of_measurement: 'W', device_class: 'power' });
  add('sensor.outdoor_humidity', 'Outdoor humidity', String(random.int(40, 90)), { unit_of_measurement: '%', device_class: 'humidity' });
  add('person.me', 'Me', 'home', {});
  add('sun.sun', 'Sun', 'below_horizon', { next_rising: isoInstant(end + 6 * 3_600_000) });
  // A media player lists its sources and its queue: the largest home row of the demo.
  add('media_player.living_room', 'Living room speaker', 'idle', {
    volume_level: 0.3,
    source_list: Array.from({ length: 60 }, (_, n) => `Radio station number ${n + 1} (internet stream)`),
    queue: Array.from({ length: 40 }, (_, n) => ({ title: `Track ${n + 1}`, artist: `Artist ${n % 7}`, album: `Album ${n % 5}`, duration_s: 180 + n })),
  });
  return entities;
}
