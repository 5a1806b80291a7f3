import fc from 'fast-check';
import type { FuzzStack } from '../fuzz-stack.ts';
import type { FuzzRequest } from '../http-exchange.ts';
import { brokenJsonText, hostileJson, hostileNumber, hostileText, pathSegment, plausible } from '../hostile-values.ts';
import type { Surface } from './surface.ts';

const UNAUTHORIZED = '{"error":"unauthorized"}';
const INSTANTS = ['2026-11-20 07:00:00 +0100', '2026-11-20T07:00:00Z', '0000-01-01 00:00:00 +0000', '0000-01-01T00:00:00Z', '10000-01-01T00:00:00Z', '2026-02-30 00:00:00 +0000', 1e15, -1] as const;

/** The health app's own export (metrics, workouts, sleep) with hostile values in its fields. */
const healthExport = fc.record({
  data: fc.record(
    {
      metrics: fc.array(
        fc.record({ name: plausible(['step_count', 'heart_rate', 'sleep_analysis', 'active_energy']), units: plausible(['count', 'bpm', 'kJ', 'kcal', 'hr']), data: fc.array(fc.record({ date: plausible(INSTANTS), qty: fc.oneof(hostileNumber, hostileText), source: hostileText, Min: hostileNumber, Max: hostileNumber, Avg: hostileNumber, sleepStart: plausible(INSTANTS), sleepEnd: plausible(INSTANTS), asleep: hostileNumber }, { requiredKeys: ['date'] }), { maxLength: 4 }) }, { requiredKeys: [] }),
        { maxLength: 3 },
      ),
      workouts: fc.array(fc.record({ id: hostileText, name: hostileText, start: plausible(INSTANTS), end: plausible(INSTANTS), duration: hostileNumber, activeEnergyBurned: fc.record({ qty: hostileNumber, units: plausible(['kJ', 'kcal']) }) }, { requiredKeys: [] }), { maxLength: 3 }),
    },
    { requiredKeys: [] },
  ),
});

/** The canonical `{records:[…]}` form, for the connection's sector (health). */
const canonical = fc.record({
  records: fc.array(
    fc.oneof(
      fc.record({ object: plausible(['health.sample', 'health.workout', 'health.sleep_session', 'home.entity']), source_id: fc.oneof(hostileText, hostileNumber), metric: hostileText, value: fc.oneof(hostileNumber, hostileText), unit: hostileText, start_at: plausible(INSTANTS), end_at: plausible(INSTANTS), sport: hostileText, duration_s: hostileNumber }, { requiredKeys: ['object'] }),
      hostileJson,
    ),
    { maxLength: 5 },
  ),
});

/** `POST /api/ingest/:id`: the secret is checked before the body, and every refusal is the same 401 (spec 7). */
export const ingestSurface: Surface = {
  name: 'ingest',
  requests(stack: FuzzStack) {
    return fc
      .record({
        id: fc.oneof({ weight: 5, arbitrary: fc.constant(stack.connectionId) }, { weight: 1, arbitrary: pathSegment }),
        auth: fc.constantFrom('bearer', 'bearer', 'webhook', 'wrong', 'none', 'both-wrong'),
        body: fc.oneof({ weight: 3, arbitrary: healthExport }, { weight: 3, arbitrary: canonical }, { weight: 1, arbitrary: hostileJson }, { weight: 1, arbitrary: brokenJsonText }),
      })
      .map(({ id, auth, body }): FuzzRequest => {
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        if (auth === 'bearer') headers.authorization = `Bearer ${stack.ingestSecret}`;
        if (auth === 'webhook') headers['x-pci-webhook-secret'] = stack.ingestSecret;
        if (auth === 'wrong') headers.authorization = `Bearer ${'0'.repeat(64)}`;
        if (auth === 'both-wrong') headers['x-pci-webhook-secret'] = stack.ingestSecret.slice(1);
        return { port: 'console', method: 'POST', path: `/api/ingest/${id}`, headers, body };
      });
  },
  check(stack, request, answer) {
    const authorized = request.path === `/api/ingest/${stack.connectionId}` && (request.headers.authorization === `Bearer ${stack.ingestSecret}` || request.headers['x-pci-webhook-secret'] === stack.ingestSecret);
    if (!authorized && (answer.status !== 401 || answer.body !== UNAUTHORIZED)) return [`spec 7: an unauthorised push answers 401 ${UNAUTHORIZED}`];
    return [];
  },
};
