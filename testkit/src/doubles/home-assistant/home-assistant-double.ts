import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  DEMO_ENTITIES,
  DEMO_SERVICES,
  type HaDomainServices,
  type HaService,
  type HaServiceField,
  type HaState,
  type SeedEntity,
} from './home-assistant-fixtures.ts';

/**
 * A local Home Assistant for tests and the demo (reference/providers.md §9): the REST API on 127.0.0.1
 * with a long-lived bearer token (401 otherwise), string states, the object-shaped service catalogue,
 * service calls that validate their data and answer with the states they changed, the three
 * `return_response` 400s, and `/api/history/period` with its required `filter_entity_id`. Faults (errors,
 * 429 with Retry-After, a source that never answers, a request held until released) are switched on
 * per path by the test.
 *
 * Sources, cited at each behaviour: [HA-REST] home-assistant/developers.home-assistant @67b9719
 * `docs/api/rest.md`; [HA-CORE] home-assistant/core @55899cb `homeassistant/components/api/__init__.py`;
 * [HA-HIST] home-assistant/core `homeassistant/components/history/__init__.py` (HistoryPeriodView) and its
 * tests; aiohttp's plain-text error bodies (`<status>: <reason>`), which HA's HTTP server answers with;
 * providers.md §9.x. A behaviour none of them settles is marked `guess:`. The faults are scenarios a test turns
 * on; HA itself documents no 429 (guess: its form, plain text with Retry-After).
 */

const TARGET_KEYS = ['entity_id', 'device_id', 'area_id', 'floor_id', 'label_id'];
/** Domains whose attribute-only changes count as significant in history (as in HA's recorder). */
const SIGNIFICANT_DOMAINS = new Set(['climate', 'device_tracker', 'humidifier', 'thermostat', 'water_heater']);
const ENTITY_ID = /^(?!.+__)(?!_)[\da-z_]+(?<!_)\.(?!_)[\da-z_]+(?<!_)$/;

export type RecordedRequest = { method: string; path: string; at: number };

type Fault =
  | { kind: 'fail'; match: (path: string) => boolean; status: number; retryAfter?: string; remaining: number }
  | { kind: 'hang'; match: (path: string) => boolean; held: ServerResponse[] }
  | { kind: 'stall'; match: (path: string) => boolean; waiting: Array<() => void>; released: boolean; onArrive: () => void };

export type HomeAssistantDoubleOptions = {
  token?: string;
  /** The hub's own zone, as `/api/config` reports it (default Europe/Berlin). */
  timeZone?: string;
  entities?: readonly SeedEntity[];
  services?: readonly HaDomainServices[];
  /** Default 0: a free port. */
  port?: number;
};

/** HA writes timestamps as ISO 8601 with microseconds and an explicit +00:00 offset. */
export function haTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000+00:00');
}

const pathMatcher = (prefix: string | RegExp) => (path: string) => (typeof prefix === 'string' ? path.startsWith(prefix) : prefix.test(path));
const clone = <T>(value: T): T => structuredClone(value);

export async function startHomeAssistantDouble(options: HomeAssistantDoubleOptions = {}) {
  let token = options.token ?? 'ha-long-lived-token';
  const services = clone(options.services ?? DEMO_SERVICES) as HaDomainServices[];
  const states = new Map<string, HaState>();
  const history = new Map<string, HaState[]>();
  const requests: RecordedRequest[] = [];
  const faults: Fault[] = [];
  let lastTick = 0;
  const tick = () => (lastTick = Math.max(Date.now(), lastTick + 1));

  /** providers.md §9.3 [HA-REST]: `last_changed` moves only when `state` changes, `last_updated` on any change; an unchanged write is no change. */
  function writeState(entityId: string, state: string, attributes: Record<string, unknown>, context: HaState['context'], at = tick()): HaState | undefined {
    const previous = states.get(entityId);
    if (previous && previous.state === state && JSON.stringify(previous.attributes) === JSON.stringify(attributes)) return undefined;
    const now = haTime(at);
    const next: HaState = {
      entity_id: entityId,
      state,
      attributes: clone(attributes),
      last_changed: previous && previous.state === state ? previous.last_changed : now,
      last_updated: now,
      context,
    };
    states.set(entityId, next);
    history.set(entityId, [...(history.get(entityId) ?? []), clone(next)]);
    return next;
  }

  const newContext = (): HaState['context'] => ({ id: randomUUID().replaceAll('-', '').toUpperCase().slice(0, 26), parent_id: null, user_id: null });
  // A running hub's entities changed at various times in the past, not all at start-up.
  const seeds = options.entities ?? DEMO_ENTITIES;
  seeds.forEach((seed, index) => {
    const at = seed.changedAt ? Date.parse(seed.changedAt) : Date.now() - (seeds.length - index) * 60_000;
    writeState(seed.entity_id, seed.state, seed.attributes ?? {}, newContext(), at);
  });

  const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
  const sendText = (res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...headers });
    res.end(text);
  };
  // [HA-CORE] an unknown service or data its schema refuses is a plain 400 (aiohttp's text body).
  const badRequest = (res: ServerResponse) => sendText(res, 400, '400: Bad Request');

  /**
   * [HA-HIST] `GET /api/history/period[/<start>]`: start defaults to a day ago, end to start + 1 day; "Invalid
   * datetime", "filter_entity_id is missing" and "Invalid filter_entity_id" as 400 JSON messages; a start in the
   * future answers []; the state at start comes first unless `skip_initial_state`; `significant_changes_only`
   * (default on) drops attribute-only changes outside the domains the recorder counts as significant;
   * `minimal_response` keeps only state and last_changed between the first and last rows; `no_attributes`.
   * guess: "Invalid end_time" (the view's wording for a bad end_time was not in the sources read).
   */
  function historyRows(url: URL, when: string | undefined, res: ServerResponse): void {
    let start = Date.now() - 86_400_000;
    if (when !== undefined) {
      start = Date.parse(decodeURIComponent(when));
      if (Number.isNaN(start)) return send(res, 400, { message: 'Invalid datetime' });
    }
    const wanted = (url.searchParams.get('filter_entity_id') ?? '').trim().toLowerCase().split(',').filter(Boolean);
    if (wanted.length === 0) return send(res, 400, { message: 'filter_entity_id is missing' });
    if (wanted.some((id) => !states.has(id) && !ENTITY_ID.test(id))) return send(res, 400, { message: 'Invalid filter_entity_id' });
    if (start > Date.now()) return send(res, 200, []);
    const endText = url.searchParams.get('end_time');
    const end = endText ? Date.parse(endText) : start + 86_400_000;
    if (Number.isNaN(end)) return send(res, 400, { message: 'Invalid end_time' });
    const initial = !url.searchParams.has('skip_initial_state');
    const significantOnly = url.searchParams.get('significant_changes_only') !== '0';
    const minimal = url.searchParams.has('minimal_response');
    const noAttributes = url.searchParams.has('no_attributes');
    const answer: unknown[][] = [];
    for (const id of wanted) {
      const rows = history.get(id) ?? [];
      const at = (row: HaState) => Date.parse(row.last_updated);
      const before = rows.filter((row) => at(row) <= start).at(-1);
      let inRange = rows.filter((row) => at(row) > start && at(row) < end);
      if (significantOnly && !SIGNIFICANT_DOMAINS.has(id.split('.')[0] ?? '')) inRange = inRange.filter((row) => row.last_changed === row.last_updated);
      const list = [...(initial && before ? [{ ...before, last_changed: haTime(Math.max(start, Date.parse(before.last_changed))), last_updated: haTime(Math.max(start, at(before))) }] : []), ...inRange];
      if (list.length === 0) continue;
      answer.push(
        list.map((row, index) => {
          const { context: _context, ...full } = row;
          if (noAttributes) full.attributes = {};
          if (minimal && index > 0 && index < list.length - 1) return { state: row.state, last_changed: row.last_changed };
          return full;
        }),
      );
    }
    return send(res, 200, answer);
  }

  function validateField(field: HaServiceField, value: unknown): boolean {
    const [kind, config] = Object.entries(field.selector ?? {})[0] ?? [];
    if (kind === 'number') {
      const min = (config?.min as number | undefined) ?? -Infinity;
      const max = (config?.max as number | undefined) ?? Infinity;
      return typeof value === 'number' && value >= min && value <= max;
    }
    if (kind === 'select') return ((config?.options as unknown[] | undefined) ?? []).includes(value);
    if (kind === 'boolean') return typeof value === 'boolean';
    if (kind === 'text') return typeof value === 'string';
    return true;
  }

  function targetIds(data: Record<string, unknown>): string[] | 'invalid' {
    const raw = data.entity_id;
    if (raw === undefined) return [];
    const list = typeof raw === 'string' ? raw.split(',').map((id) => id.trim()) : raw;
    if (!Array.isArray(list) || list.some((id) => typeof id !== 'string' || (id !== 'all' && !ENTITY_ID.test(id)))) return 'invalid';
    return list as string[];
  }

  /** What a known service does to the entities it targets; returns a service response where one exists. */
  function perform(domain: string, service: string, data: Record<string, unknown>, ids: string[], context: HaState['context']): { changed: HaState[]; response?: unknown } {
    const targets = (ids.includes('all') ? [...states.keys()] : ids).filter((id) => id.startsWith(`${domain}.`) && states.has(id));
    const changed: HaState[] = [];
    const response: Record<string, unknown> = {};
    for (const id of targets) {
      const current = states.get(id);
      if (!current) continue;
      let state = current.state;
      const attributes = { ...current.attributes };
      const on = service === 'turn_on' || (service === 'toggle' && current.state !== 'on');
      if (['turn_on', 'turn_off', 'toggle'].includes(service)) {
        state = on ? 'on' : 'off';
        if (domain === 'light') {
          if (on) attributes.brightness = (data.brightness as number | undefined) ?? (attributes.brightness as number | undefined) ?? 255;
          else delete attributes.brightness;
        }
      } else if (domain === 'climate' && service === 'set_temperature') attributes.temperature = data.temperature;
      else if (domain === 'climate' && service === 'set_hvac_mode') state = String(data.hvac_mode);
      else if (domain === 'lock') state = service === 'lock' ? 'locked' : 'unlocked';
      else if (domain === 'weather' && service === 'get_forecasts') {
        const base = Number(attributes.temperature ?? 10);
        response[id] = { forecast: [0, 1, 2].map((day) => ({ datetime: haTime(Date.now() + day * 86_400_000), condition: current.state, temperature: base + day, templow: base - 4 })) };
        continue;
      }
      const written = writeState(id, state, attributes, context);
      if (written) changed.push(clone(written));
    }
    return { changed, response };
  }

  async function readBody(req: IncomingMessage): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  }

  /**
   * [HA-CORE] APIDomainServicesView, providers.md §9.2: a body that is not a JSON object is 400 "Data should be
   * valid JSON."; an unknown domain/service or data its schema refuses is a plain 400; `?return_response` (its
   * presence) on a service without responses, and a response-only service called without it, are the two 400
   * messages; otherwise the states this call's context changed, or `{changed_states, service_response}`.
   * guess: the selector checks stand in for each service's voluptuous schema (number range, select options,
   * boolean, text) and a field the service does not declare is refused.
   */
  async function callService(req: IncomingMessage, res: ServerResponse, url: URL, domain: string, name: string): Promise<void> {
    const text = await readBody(req);
    let data: unknown = {};
    if (text.trim() !== '') {
      try {
        data = JSON.parse(text);
      } catch {
        return send(res, 400, { message: 'Data should be valid JSON.' });
      }
    }
    if (data === null || typeof data !== 'object' || Array.isArray(data)) return send(res, 400, { message: 'Data should be valid JSON.' });
    const service: HaService | undefined = services.find((entry) => entry.domain === domain)?.services[name];
    if (!service) return badRequest(res);
    const body = data as Record<string, unknown>;
    const allowed = new Set([...Object.keys(service.fields), ...(service.target ? TARGET_KEYS : [])]);
    if (Object.keys(body).some((key) => !allowed.has(key))) return badRequest(res);
    for (const [key, field] of Object.entries(service.fields)) {
      if (!(key in body)) {
        if (field.required) return badRequest(res);
        continue;
      }
      if (!validateField(field, body[key])) return badRequest(res);
    }
    const ids = targetIds(body);
    if (ids === 'invalid') return badRequest(res);
    const wantsResponse = url.searchParams.has('return_response');
    if (wantsResponse && !service.response) {
      return send(res, 400, { message: 'Service does not support responses. Remove return_response from request.' });
    }
    if (!wantsResponse && service.response && !service.response.optional) {
      return send(res, 400, { message: 'Service call requires responses but caller did not ask for responses. Add ?return_response to query parameters.' });
    }
    const { changed, response } = perform(domain, name, body, ids, newContext());
    return send(res, 200, wantsResponse ? { changed_states: changed, service_response: response ?? {} } : changed);
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://double');
    const method = req.method ?? 'GET';
    // [HA-REST] every endpoint needs `Authorization: Bearer <long-lived token>`; a missing or wrong one is 401 (aiohttp's text).
    if (req.headers.authorization !== `Bearer ${token}`) return sendText(res, 401, '401: Unauthorized');
    const path = url.pathname;
    // [HA-REST] `GET /api/` → {"message": "API running."}.
    if (method === 'GET' && path === '/api/') return send(res, 200, { message: 'API running.' });
    // [HA-REST] `GET /api/config`: the fields its example shows. guess: the values (a hub in Berlin, metric units).
    if (method === 'GET' && path === '/api/config') {
      return send(res, 200, {
        components: ['api', 'history', ...services.map((s) => s.domain)],
        config_dir: '/config',
        elevation: 34,
        latitude: 52.52,
        longitude: 13.405,
        location_name: 'Home',
        time_zone: options.timeZone ?? 'Europe/Berlin',
        unit_system: { length: 'km', mass: 'g', temperature: '°C', volume: 'L' },
        version: '2025.1.0',
        whitelist_external_dirs: [],
      });
    }
    // [HA-REST] `GET /api/states`, `GET /api/states/<entity_id>` (404 {"message": "Entity not found."}); states are
    // strings, timestamps ISO 8601 with microseconds and +00:00 (providers.md §9.3).
    if (method === 'GET' && path === '/api/states') return send(res, 200, [...states.values()]);
    const single = /^\/api\/states\/([^/]+)$/.exec(path);
    if (method === 'GET' && single) {
      const state = states.get(decodeURIComponent(single[1] ?? ''));
      return state ? send(res, 200, state) : send(res, 404, { message: 'Entity not found.' });
    }
    // [HA-CORE] providers.md §9.4: `services` is an object keyed by service name (rest.md's list example is outdated).
    if (method === 'GET' && path === '/api/services') return send(res, 200, services);
    const call = /^\/api\/services\/([^/]+)\/([^/]+)$/.exec(path);
    if (call) {
      // [HA-REST] 405 for a method the endpoint does not take (aiohttp's text).
      if (method !== 'POST') return sendText(res, 405, '405: Method Not Allowed');
      return callService(req, res, url, decodeURIComponent(call[1] ?? ''), decodeURIComponent(call[2] ?? ''));
    }
    const period = /^\/api\/history\/period(?:\/([^/]+))?$/.exec(path);
    if (method === 'GET' && period) return historyRows(url, period[1], res);
    // guess: HA answers an unknown path with aiohttp's plain 404.
    return sendText(res, 404, '404: Not Found');
  }

  const server = createServer((req, res) => {
    const path = req.url ?? '/';
    requests.push({ method: req.method ?? 'GET', path, at: Date.now() });
    // HA's HTTP server (aiohttp) refuses a request URL over 8190 bytes with a 400 before any handler runs:
    // "Got more than 8190 bytes (N) when reading Status line is too long." (home-assistant/supervisor#3137 and
    // #3737; aio-libs/aiohttp#7177). guess: the exact body text around that message.
    const urlBytes = Buffer.byteLength(path);
    if (urlBytes > 8190) return sendText(res, 400, `400, message:\n  Got more than 8190 bytes (${urlBytes}) when reading Status line is too long.`);
    const fault = faults.find((candidate) => candidate.match(path) && (candidate.kind !== 'fail' || candidate.remaining > 0) && (candidate.kind !== 'stall' || !candidate.released));
    const proceed = () => route(req, res).catch(() => (res.headersSent ? res.destroy() : sendText(res, 500, '500: Internal Server Error')));
    if (!fault) return void proceed();
    if (fault.kind === 'fail') {
      fault.remaining -= 1;
      const headers: Record<string, string> = fault.retryAfter === undefined ? {} : { 'retry-after': fault.retryAfter };
      return sendText(res, fault.status, `${fault.status}: ${fault.status === 429 ? 'Too Many Requests' : 'Internal Server Error'}`, headers);
    }
    if (fault.kind === 'hang') return void fault.held.push(res);
    fault.waiting.push(() => void proceed());
    fault.onArrive();
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    get token() {
      return token;
    },
    /** Revokes the current token (the hub answers 401 from now on) and issues another. */
    rotateToken(next = `ha-token-${randomUUID()}`): string {
      token = next;
      return token;
    },
    requests,
    /** The requests whose path starts with `prefix`. */
    requestsTo(prefix: string): RecordedRequest[] {
      return requests.filter((request) => request.path.startsWith(prefix));
    },
    state(entityId: string): HaState | undefined {
      const state = states.get(entityId);
      return state && clone(state);
    },
    /** Changes an entity as a device would (a new entity appears); returns its new state. */
    setState(entityId: string, state: string, attributes?: Record<string, unknown>): HaState | undefined {
      return writeState(entityId, state, attributes ?? states.get(entityId)?.attributes ?? {}, newContext());
    },
    removeEntity(entityId: string): void {
      states.delete(entityId);
    },
    /** The next `times` requests under `prefix` answer `status` (with Retry-After when given). */
    failNext(prefix: string | RegExp, status: number, options: { times?: number; retryAfter?: string } = {}): void {
      faults.push({ kind: 'fail', match: pathMatcher(prefix), status, retryAfter: options.retryAfter, remaining: options.times ?? 1 });
    },
    /** Requests under `prefix` are never answered until the returned function is called. */
    hang(prefix: string | RegExp): () => void {
      const fault: Fault = { kind: 'hang', match: pathMatcher(prefix), held: [] };
      faults.push(fault);
      return () => {
        faults.splice(faults.indexOf(fault), 1);
        for (const res of fault.held) res.destroy();
      };
    },
    /** Holds requests under `prefix`; `arrived` resolves when the first one is held; `release` lets them through. */
    stall(prefix: string | RegExp): { arrived: Promise<void>; release(): void } {
      let onArrive = () => {};
      const arrived = new Promise<void>((resolve) => (onArrive = resolve));
      const fault: Fault = { kind: 'stall', match: pathMatcher(prefix), waiting: [], released: false, onArrive };
      faults.push(fault);
      return {
        arrived,
        release() {
          fault.released = true;
          for (const go of fault.waiting.splice(0)) go();
        },
      };
    },
    async close(): Promise<void> {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type HomeAssistantDouble = Awaited<ReturnType<typeof startHomeAssistantDouble>>;
