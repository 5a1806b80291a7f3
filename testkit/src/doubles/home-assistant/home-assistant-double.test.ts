import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHomeAssistantDouble, type HomeAssistantDouble } from './home-assistant-double.ts';

// The double must behave like the real hub for the connector tests to mean anything (reference §9.6).
let hub: HomeAssistantDouble;
const get = (path: string, token = hub.token) => fetch(`${hub.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
const post = (path: string, body: unknown) =>
  fetch(`${hub.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${hub.token}`, 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) });

beforeAll(async () => {
  hub = await startHomeAssistantDouble();
});
afterAll(async () => hub.close());

describe('the Home Assistant double', () => {
  it('answers 401 to a missing or wrong token', async () => {
    expect((await fetch(`${hub.url}/api/states`)).status).toBe(401);
    const wrong = await get('/api/states', 'nope');
    expect([wrong.status, await wrong.text()]).toEqual([401, '401: Unauthorized']);
    expect(await (await get('/api/')).json()).toEqual({ message: 'API running.' });
  });

  it('serves string states with microsecond +00:00 timestamps, and 404 for an unknown entity', async () => {
    const states = (await (await get('/api/states')).json()) as Array<{ state: unknown; last_updated: string }>;
    expect(states.length).toBeGreaterThan(5);
    for (const state of states) {
      expect(typeof state.state).toBe('string');
      expect(state.last_updated).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$/);
    }
    const missing = await get('/api/states/light.nowhere');
    expect([missing.status, await missing.json()]).toEqual([404, { message: 'Entity not found.' }]);
  });

  it('serves the service catalogue keyed by service name, with response flags', async () => {
    const catalogue = (await (await get('/api/services')).json()) as Array<{ domain: string; services: Record<string, { response?: unknown }> }>;
    const light = catalogue.find((entry) => entry.domain === 'light');
    expect(Object.keys(light?.services ?? {})).toEqual(expect.arrayContaining(['turn_on', 'turn_off', 'toggle']));
    expect(catalogue.find((entry) => entry.domain === 'weather')?.services.get_forecasts?.response).toEqual({ optional: false });
  });

  it('answers a service call with the states it changed, and nothing when nothing changed', async () => {
    const changed = (await (await post('/api/services/light/turn_on', { entity_id: 'light.living_room', brightness: 90 })).json()) as Array<{ entity_id: string; state: string }>;
    expect(changed).toMatchObject([{ entity_id: 'light.living_room', state: 'on', attributes: { brightness: 90 } }]);
    expect(await (await post('/api/services/light/turn_on', { entity_id: 'light.living_room', brightness: 90 })).json()).toEqual([]);
    // A well-formed entity that does not exist is ignored by the real hub, not refused.
    expect(await (await post('/api/services/light/turn_on', { entity_id: 'light.nowhere' })).json()).toEqual([]);
  });

  it.each([
    ['an unknown service', '/api/services/light/explode', { entity_id: 'light.kitchen' }, '400: Bad Request'],
    ['an unknown domain', '/api/services/teleport/now', {}, '400: Bad Request'],
    ['data out of range', '/api/services/light/turn_on', { entity_id: 'light.kitchen', brightness: 999 }, '400: Bad Request'],
    ['an extra key', '/api/services/light/turn_on', { entity_id: 'light.kitchen', colour: 'red' }, '400: Bad Request'],
    ['a malformed entity id', '/api/services/light/turn_on', { entity_id: 'kitchen' }, '400: Bad Request'],
    ['a missing required field', '/api/services/climate/set_temperature', { entity_id: 'climate.living_room' }, '400: Bad Request'],
    ['a body that is not JSON', '/api/services/light/turn_on', '{nope', '{"message":"Data should be valid JSON."}'],
    ['a response-only service called without return_response', '/api/services/weather/get_forecasts', { entity_id: 'weather.home', type: 'daily' }, 'requires responses'],
    ['return_response on a service without responses', '/api/services/light/toggle?return_response', { entity_id: 'light.kitchen' }, 'does not support responses'],
  ])('refuses %s with 400', async (_what, path, body, text) => {
    const response = await post(path, body);
    expect(response.status).toBe(400);
    expect(await response.text()).toContain(text);
  });

  it('returns a service response when asked', async () => {
    const answer = (await (await post('/api/services/weather/get_forecasts?return_response', { entity_id: 'weather.home', type: 'daily' })).json()) as {
      changed_states: unknown[];
      service_response: Record<string, { forecast: unknown[] }>;
    };
    expect(answer.changed_states).toEqual([]);
    expect(answer.service_response['weather.home']?.forecast).toHaveLength(3);
  });

  it('requires filter_entity_id on history and returns only changes after the start when the initial state is skipped', async () => {
    expect(await (await get('/api/history/period/2020-01-01T00:00:00Z')).json()).toEqual({ message: 'filter_entity_id is missing' });
    const since = hub.state('switch.coffee_maker')?.last_updated ?? '';
    hub.setState('switch.coffee_maker', 'on');
    const rows = (await (await get(`/api/history/period/${encodeURIComponent(since)}?filter_entity_id=switch.coffee_maker,light.kitchen&skip_initial_state`)).json()) as Array<Array<{ entity_id: string; state: string }>>;
    expect(rows).toEqual([[expect.objectContaining({ entity_id: 'switch.coffee_maker', state: 'on' })]]);
  });

  it('refuses a request URL over 8190 bytes with a 400, as its HTTP server does, and serves one just under', async () => {
    const ids = (count: number) => Array.from({ length: count }, (_, i) => `sensor.s${String(i).padStart(5, '0')}`).join(',');
    const long = await get(`/api/history/period?filter_entity_id=${ids(600)}`);
    expect(long.status).toBe(400);
    expect(await long.text()).toMatch(/Got more than 8190 bytes \(\d+\) when reading Status line is too long/);
    const short = await get(`/api/history/period?filter_entity_id=${ids(450)}`);
    expect(short.status).toBe(200);
  });
});
