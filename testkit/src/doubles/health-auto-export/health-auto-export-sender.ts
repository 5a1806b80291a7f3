/**
 * The phone health app (Health Auto Export) as a local double: it pushes to us, so the double is a sender
 * (reference §4.1, §10). The payloads reproduce what the app really posts: `yyyy-MM-dd HH:mm:ss +hhmm`
 * times, metrics with per-minute points, heart rate as Min/Avg/Max, energy in kJ or kcal as the phone is
 * set, both sleep shapes (aggregated per night, and stage segments from watch and phone), and both
 * workout versions (v2 with an id and `activeEnergyBurned`, v1 without an id and with `activeEnergy`).
 *
 * Sources, cited at each shape: [HAE-WIKI] https://github.com/Lybron/health-auto-export/wiki/API-Export---JSON-Format
 * (the envelope, metric objects, both sleep shapes, the newer top-level arrays); [HAE-HELP]
 * https://help.healthyapps.dev/en/health-auto-export/export-format/workouts and .../automations/rest-api (v2
 * workouts, the POST with the operator's custom headers); [HAE-GO] irvinlim/apple-health-ingester @0f578a7
 * `pkg/healthautoexport/types.go` and fixtures (field names, v1 workouts); providers.md §4.1. Values (the
 * numbers, devices, the demo day) are made up; a shape the sources do not settle is marked `guess:`.
 */

/** `yyyy-MM-dd HH:mm:ss +hhmm` in the phone's time zone (`offsetMinutes` east of UTC): [HAE-WIKI], providers.md §4.1 traps. */
export function haeTime(at: Date | number, offsetMinutes = 60): string {
  const local = new Date((typeof at === 'number' ? at : at.getTime()) + offsetMinutes * 60_000);
  const pad = (n: number) => String(Math.abs(n)).padStart(2, '0');
  const sign = offsetMinutes < 0 ? '-' : '+';
  return `${local.getUTCFullYear()}-${pad(local.getUTCMonth() + 1)}-${pad(local.getUTCDate())} ${pad(local.getUTCHours())}:${pad(local.getUTCMinutes())}:${pad(local.getUTCSeconds())} ${sign}${pad(Math.floor(Math.abs(offsetMinutes) / 60))}${pad(Math.abs(offsetMinutes) % 60)}`;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** Midnight UTC of the day `daysAgo` before now, so payloads look recent. */
export function dayStart(daysAgo = 1, now = Date.now()): number {
  const today = new Date(now);
  return Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate()) - daysAgo * 24 * HOUR;
}

/**
 * A push as the current app version sends it: a phone set to kJ, aggregated sleep, v2 workouts.
 * Counts: 6 step points, 3 heart-rate points (one with Min ≠ Max), 2 energy points, 1 blood pressure,
 * 1 night, 1 workout.
 *
 * `stepSource` is the step points' `source` (and `sleepSource` the night's): a point aggregates every device that recorded in its minute and
 * names them joined by `|`, so a bucket re-sent after the watch synced may say `iPhone|Apple Watch` where the
 * first push said `iPhone` (issue 31 item 12; third-party receivers' sample payloads carry
 * `"source": "iPhone|Apple Watch"`; when exactly the app re-sends a changed list is a guess, reference §4.1 is silent).
 */
export function haePayloadV2(day = dayStart(1), options: { stepSource?: string; sleepSource?: string } = {}) {
  const stepSource = options.stepSource ?? 'iPhone';
  const at = (offset: number) => haeTime(day + offset);
  // [HAE-WIKI] `{"data": {"metrics": [...], "workouts": [...]}}`; a metric is `{name, units, data}` with snake_case
  // names and units as the phone is set; most points `{qty, date}`, heart rate `{Min, Avg, Max, date}`, blood
  // pressure `{systolic, diastolic, date}`, aggregated sleep one row per night (hours). guess: the `source` on step
  // points (seen in third-party receivers' samples, not in the wiki's table).
  return {
    data: {
      metrics: [
        { name: 'step_count', units: 'count', data: [0, 1, 2, 3, 4, 5].map((i) => ({ qty: 40 + i * 7, date: at(8 * HOUR + i * MINUTE), source: stepSource })) },
        {
          name: 'heart_rate',
          units: 'count/min',
          data: [
            { Min: 58, Avg: 58, Max: 58, date: at(7 * HOUR), source: 'Apple Watch' },
            { Min: 61, Avg: 64, Max: 70, date: at(7 * HOUR + MINUTE), source: 'Apple Watch' },
            { Min: 90, Avg: 90, Max: 90, date: at(18 * HOUR), source: 'Apple Watch' },
          ],
        },
        { name: 'active_energy', units: 'kJ', data: [{ qty: 41.84, date: at(8 * HOUR) }, { qty: 20.92, date: at(8 * HOUR + MINUTE) }] },
        { name: 'blood_pressure', units: 'mmHg', data: [{ systolic: 121, diastolic: 79, date: at(9 * HOUR) }] },
        {
          name: 'sleep_analysis',
          units: 'hr',
          data: [
            {
              date: at(0).slice(0, 10),
              totalSleep: 7,
              asleep: 0.5,
              core: 4,
              deep: 1.25,
              rem: 1.25,
              awake: 0.25,
              inBed: 7.5,
              sleepStart: haeTime(day - 1.5 * HOUR),
              sleepEnd: haeTime(day + 5.75 * HOUR),
              inBedStart: haeTime(day - 2 * HOUR),
              inBedEnd: haeTime(day + 5.5 * HOUR),
              sleepSource: options.sleepSource ?? 'Apple Watch',
              inBedSource: 'iPhone',
            },
          ],
        },
        // Newer app versions add arrays the gateway does not read; they must be ignored.
        { name: 'mindful_minutes', units: 'min', data: [] },
      ],
      // [HAE-HELP] v2 workouts: required id, name, start, end, duration (s); `{qty, units}` quantities; heartRateData,
      // route. The `heartRate` {min, avg, max} summary: third-party receivers' types (e.g. HAEHeartRateSummary) — guess
      // that every version sends it.
      workouts: [
        {
          id: '7C3AB2D1-4E5F-4A6B-8C9D-0E1F2A3B4C5D',
          name: 'Outdoor Run',
          start: at(17 * HOUR),
          end: at(17 * HOUR + 40 * MINUTE),
          duration: 2400,
          location: 'Outdoor',
          isIndoor: false,
          activeEnergyBurned: { qty: 2092, units: 'kJ' },
          distance: { qty: 7.5, units: 'km' },
          heartRate: { min: { qty: 98, units: 'bpm' }, avg: { qty: 151, units: 'bpm' }, max: { qty: 178, units: 'bpm' } },
          heartRateData: [{ date: at(17 * HOUR + MINUTE), qty: 120, units: 'bpm' }],
          route: [{ lat: 52.52, lon: 13.405, altitude: 34, timestamp: at(17 * HOUR) }],
        },
      ],
      // [HAE-WIKI] newer app versions add top-level arrays such as stateOfMind.
      stateOfMind: [],
    },
  };
}

/**
 * A push from an older app version on a phone set to kcal: v1 workouts (no id, no duration) and sleep
 * as stage segments, from the watch (with stages) and the phone (in bed only), overlapping.
 */
export function haePayloadV1(day = dayStart(2)) {
  const at = (offset: number) => haeTime(day + offset);
  // [HAE-WIKI] unaggregated sleep: `{startDate, endDate, qty, value, source}` segments, watch and phone overlapping;
  // [HAE-GO] v1 workouts: no id, `activeEnergy`/`stepCount` as `{qty, units}`.
  const segment = (from: number, to: number, value: string, source: string) => ({
    startDate: haeTime(day + from),
    endDate: haeTime(day + to),
    qty: (to - from) / HOUR,
    value,
    source,
  });
  return {
    data: {
      metrics: [
        { name: 'active_energy', units: 'kcal', data: [{ qty: 12, date: at(10 * HOUR) }] },
        {
          name: 'sleep_analysis',
          units: 'hr',
          data: [
            segment(-1 * HOUR, 0, 'Core', 'Apple Watch'),
            segment(0, 1 * HOUR, 'Deep', 'Apple Watch'),
            segment(1 * HOUR, 1.25 * HOUR, 'Awake', 'Apple Watch'),
            segment(1.25 * HOUR, 3 * HOUR, 'REM', 'Apple Watch'),
            segment(3 * HOUR, 6 * HOUR, 'Core', 'Apple Watch'),
            segment(-1.5 * HOUR, 6.5 * HOUR, 'In Bed', 'iPhone'),
          ],
        },
      ],
      workouts: [
        {
          name: 'Walking',
          start: at(12 * HOUR),
          end: at(12 * HOUR + 30 * MINUTE),
          activeEnergy: { qty: 150, units: 'kcal' },
          stepCount: { qty: 3100, units: 'steps' },
          distance: { qty: 1.5, units: 'mi' },
          heartRateData: [
            { date: at(12 * HOUR + MINUTE), qty: 100, units: 'bpm' },
            { date: at(12 * HOUR + 2 * MINUTE), qty: 110, units: 'bpm' },
          ],
        },
      ],
    },
  };
}

export type PushHeader = 'bearer' | 'webhook-secret';

/**
 * One push, as the app's REST API automation sends it ([HAE-HELP]: a JSON POST to the URL the person entered, with
 * any headers they added — here the secret). guess: no other header (`automation-name`/`automation-id` are seen in
 * a third-party spec only, providers.md §4.1).
 */
export async function sendHealthPush(url: string, secret: string, payload: unknown, header: PushHeader = 'bearer'): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (header === 'bearer') headers.authorization = `Bearer ${secret}`;
  else headers['x-pci-webhook-secret'] = secret;
  return fetch(url, { method: 'POST', headers, body: JSON.stringify(payload) });
}

/**
 * Pushes on a timer, like the app's automation ([HAE-HELP] default period: yesterday and today, several times a
 * day; here every `everyMs`): each push
 * repeats yesterday (overlap is normal) and adds today's points so far. `stop()` ends it.
 */
export function startHealthPushSender(options: { url: string; secret: string; everyMs: number; onPush?: (status: number) => void }) {
  let stopped = false;
  const push = async () => {
    if (stopped) return;
    const response = await sendHealthPush(options.url, options.secret, haePayloadV2(dayStart(1))).catch(() => undefined);
    await sendHealthPush(options.url, options.secret, haePayloadV2(dayStart(0))).catch(() => undefined);
    options.onPush?.(response?.status ?? 0);
  };
  const timer = setInterval(() => void push(), options.everyMs);
  void push();
  return {
    stop() {
      stopped = true;
      clearInterval(timer);
    },
  };
}
