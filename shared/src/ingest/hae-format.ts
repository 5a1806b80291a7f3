import { haeDay, parseHaeTime } from './hae-time.ts';
import type { RejectedRecord } from './ingest-types.ts';

/**
 * The phone health app's export JSON (Health Auto Export, reference §4.1) as cache records:
 * `{"data": {"metrics": [...], "workouts": [...]}}` → `health.sample`, `health.workout`,
 * `health.sleep_session`. Unknown fields and the newer arrays (stateOfMind, medications, …) are ignored;
 * a data point that cannot be read is skipped, counted and listed with its place, never guessed at. Source
 * ids are stable, so a re-sent push (overlapping periods are normal) updates rows instead of adding them.
 */
type HaeRecord = Record<string, unknown> & { source_id: string };
export type HaeRecords = {
  samples: HaeRecord[];
  workouts: HaeRecord[];
  sleepSessions: HaeRecord[];
  skipped: number;
  /** The points that were skipped, each with its place in the payload and the field at fault. */
  rejected: RejectedRecord[];
  /** Where in the payload each record came from, to name it if it cannot be stored. */
  origins: WeakMap<object, string>;
};

const HAE_TIME_RULE = 'must be a time written yyyy-MM-dd HH:mm:ss Z, with its offset';

function skip(out: HaeRecords, record: string, field: string, error: string): void {
  out.skipped += 1;
  out.rejected.push({ record, field, error });
}

function emit(out: HaeRecords, list: HaeRecord[], record: HaeRecord, origin: string): void {
  list.push(record);
  out.origins.set(record, origin);
}

type Loose = Record<string, unknown>;
const isObject = (value: unknown): value is Loose => value !== null && typeof value === 'object' && !Array.isArray(value);
const num = (value: unknown): number | undefined => (typeof value === 'number' && Number.isFinite(value) ? value : undefined);
const str = (value: unknown): string | undefined => (typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined);

export function isHaePayload(body: unknown): boolean {
  return isObject(body) && isObject(body.data) && (Array.isArray(body.data.metrics) || Array.isArray(body.data.workouts));
}

const HOUR_S = 3600;

/** Energy in kilocalories: kJ are converted (1 kcal = 4.184 kJ); an unknown unit gives nothing. */
function kcal(quantity: unknown): number | undefined {
  if (!isObject(quantity)) return undefined;
  const qty = num(quantity.qty);
  const units = str(quantity.units)?.toLowerCase();
  if (qty === undefined) return undefined;
  if (units === 'kcal') return qty;
  if (units === 'kj') return qty / 4.184;
  return undefined;
}

const METRES: Record<string, number> = { m: 1, km: 1000, mi: 1609.344, yd: 0.9144, ft: 0.3048 };

function metres(quantity: unknown): number | undefined {
  if (!isObject(quantity)) return undefined;
  const qty = num(quantity.qty);
  const factor = METRES[str(quantity.units)?.toLowerCase() ?? 'm'];
  return qty === undefined || factor === undefined ? undefined : qty * factor;
}

const qtyOf = (quantity: unknown): number | undefined => (isObject(quantity) ? num(quantity.qty) : undefined);

function heartRateSeries(workout: Loose): number[] {
  const series = Array.isArray(workout.heartRateData) ? workout.heartRateData : [];
  return series.flatMap((point) => {
    const value = isObject(point) ? (num(point.qty) ?? num(point.Avg) ?? num(point.avg)) : undefined;
    return value === undefined ? [] : [value];
  });
}

/**
 * A sample's id names its bucket: the metric and the bucket's instant (reference §4.1: points are
 * aggregated per minute, heart rate per second). `source` is not part of it: it lists the devices merged into
 * the bucket, joined by `|`, and the list grows when another device syncs later, so a re-sent bucket would
 * otherwise be a second row and count twice (issue 31 item 12). Rows written under the older
 * `<metric>|<instant>|<source>` id are re-keyed by migration 1795300020310.
 */
export const haeSampleId = (metric: string, at: string): string => `${metric}|${at}`;

function sampleRecords(metric: Loose, place: string, out: HaeRecords): void {
  const name = str(metric.name);
  const unit = str(metric.units) ?? null;
  const points = Array.isArray(metric.data) ? metric.data : [];
  if (!name) {
    points.forEach((_point, index) => skip(out, `${place}.data[${index}]`, 'name', "its metric has no 'name'"));
    return;
  }
  for (const [index, point] of points.entries()) {
    const origin = `${place}.data[${index}]`;
    if (!isObject(point)) {
      skip(out, origin, '(record)', 'must be an object');
      continue;
    }
    const at = parseHaeTime(point.date);
    if (!at) {
      skip(out, origin, 'date', HAE_TIME_RULE);
      continue;
    }
    const device = str(point.source) ?? null;
    const add = (metricName: string, value: number) =>
      emit(out, out.samples, { source_id: haeSampleId(metricName, at), metric: metricName, value, unit, start_at: at, end_at: null, device }, origin);
    const qty = num(point.qty);
    const avg = num(point.Avg);
    if (qty !== undefined) add(name, qty);
    else if (avg !== undefined) {
      // Heart rate comes as Min/Avg/Max; per-second points have all three equal.
      add(name, avg);
      const min = num(point.Min);
      const max = num(point.Max);
      if (min !== undefined && min !== avg) add(`${name}_min`, min);
      if (max !== undefined && max !== avg) add(`${name}_max`, max);
    } else if (num(point.systolic) !== undefined || num(point.diastolic) !== undefined) {
      const systolic = num(point.systolic);
      const diastolic = num(point.diastolic);
      if (systolic !== undefined) add(`${name}_systolic`, systolic);
      if (diastolic !== undefined) add(`${name}_diastolic`, diastolic);
    } else skip(out, origin, 'qty', 'no value: expected qty, Min/Avg/Max, or systolic/diastolic');
  }
}

/**
 * An aggregated night's id: the app sends one point per night (reference §4.1), and its `sleepSource`,
 * like a sample's `source`, lists the devices merged into it, which may change when the night is re-sent
 * (`"iPhone|Apple Watch"`), so the night alone names it, as `haeSampleId` does for samples.
 */
export const haeNightId = (night: string): string => `sleep|${night}`;

/** Aggregated sleep: one point per night, durations in hours. */
function aggregatedSleep(point: Loose, origin: string, out: HaeRecords): void {
  const start = parseHaeTime(point.inBedStart) ?? parseHaeTime(point.sleepStart);
  const end = parseHaeTime(point.inBedEnd) ?? parseHaeTime(point.sleepEnd);
  if (!start || !end) {
    skip(out, origin, start ? 'inBedEnd' : 'inBedStart', `inBedStart or sleepStart, and inBedEnd or sleepEnd, ${HAE_TIME_RULE}`);
    return;
  }
  const hours = (key: string) => num(point[key]);
  const stages = ['asleep', 'core', 'deep', 'rem'].map(hours);
  const asleepHours = hours('totalSleep') ?? (stages.some((value) => value !== undefined) ? stages.reduce<number>((sum, value) => sum + (value ?? 0), 0) : undefined);
  const inBed = hours('inBed');
  const inBedS = inBed !== undefined && inBed > 0 ? inBed * HOUR_S : (Date.parse(end) - Date.parse(start)) / 1000;
  const asleepS = asleepHours === undefined ? null : asleepHours * HOUR_S;
  emit(out, out.sleepSessions, {
    source_id: haeNightId(haeDay(point.date) ?? start),
    start_at: start,
    end_at: end,
    in_bed_s: inBedS,
    asleep_s: asleepS,
    rem_s: hours('rem') === undefined ? null : (hours('rem') ?? 0) * HOUR_S,
    deep_s: hours('deep') === undefined ? null : (hours('deep') ?? 0) * HOUR_S,
    light_s: hours('core') === undefined ? null : (hours('core') ?? 0) * HOUR_S,
    awake_s: hours('awake') === undefined ? null : (hours('awake') ?? 0) * HOUR_S,
    efficiency_pct: asleepS !== null && inBedS > 0 ? Math.min(100, (asleepS / inBedS) * 100) : null,
    score: null,
  }, origin);
}

type Segment = { start: number; end: number; value: string; source: string };
/** Segments further apart than this belong to different sessions (a nap is not last night). */
const SESSION_GAP_MS = 60 * 60_000;

/**
 * Unaggregated sleep: stage segments (`In Bed`, `Asleep`, `Core`, `Deep`, `REM`, `Awake`), often from
 * both the phone and the watch. Segments are joined into sessions per source, and where sessions of two
 * sources overlap only the one with the most stage detail is kept (HealthKit: one source per night).
 */
function segmentedSleep(points: ReadonlyArray<{ point: Loose; origin: string }>, place: string, out: HaeRecords): void {
  const segments: Segment[] = [];
  for (const { point, origin } of points) {
    const start = parseHaeTime(point.startDate);
    const end = parseHaeTime(point.endDate);
    if (!start || !end) {
      skip(out, origin, start ? 'endDate' : 'startDate', HAE_TIME_RULE);
      continue;
    }
    if (Date.parse(end) < Date.parse(start)) {
      skip(out, origin, 'endDate', 'must not be before startDate');
      continue;
    }
    segments.push({ start: Date.parse(start), end: Date.parse(end), value: str(point.value) ?? 'Unspecified', source: str(point.source) ?? '' });
  }
  type Session = { source: string; start: number; end: number; parts: Segment[] };
  const sessions: Session[] = [];
  for (const source of new Set(segments.map((segment) => segment.source))) {
    let current: Session | undefined;
    for (const segment of segments.filter((s) => s.source === source).sort((a, b) => a.start - b.start)) {
      if (current && segment.start - current.end <= SESSION_GAP_MS) {
        current.end = Math.max(current.end, segment.end);
        current.parts.push(segment);
      } else {
        current = { source, start: segment.start, end: segment.end, parts: [segment] };
        sessions.push(current);
      }
    }
  }
  const detail = (session: Session) => session.parts.filter((part) => ['Core', 'Deep', 'REM'].includes(part.value)).length;
  const asleep = (session: Session) => total(session, ['Asleep', 'Core', 'Deep', 'REM', 'Unspecified']);
  const kept = sessions.filter(
    (session) =>
      !sessions.some(
        (other) =>
          other !== session &&
          other.start < session.end &&
          session.start < other.end &&
          (detail(other) > detail(session) || (detail(other) === detail(session) && (asleep(other) > asleep(session) || (asleep(other) === asleep(session) && other.source < session.source)))),
      ),
  );
  for (const session of kept) {
    const staged = detail(session) > 0;
    const inBedParts = total(session, ['In Bed']);
    const inBedS = inBedParts > 0 ? inBedParts : (session.end - session.start) / 1000;
    const asleepS = asleep(session);
    // A session joins several segments, so it is named by its metric.
    emit(out, out.sleepSessions, {
      source_id: `sleep|${new Date(session.start).toISOString()}|${session.source}`,
      start_at: new Date(session.start).toISOString(),
      end_at: new Date(session.end).toISOString(),
      in_bed_s: inBedS,
      asleep_s: asleepS,
      rem_s: staged ? total(session, ['REM']) : null,
      deep_s: staged ? total(session, ['Deep']) : null,
      light_s: staged ? total(session, ['Core']) : null,
      awake_s: total(session, ['Awake']),
      efficiency_pct: inBedS > 0 ? Math.min(100, (asleepS / inBedS) * 100) : null,
      score: null,
    }, place);
  }
}

function total(session: { parts: Segment[] }, values: readonly string[]): number {
  return session.parts.filter((part) => values.includes(part.value)).reduce((sum, part) => sum + (part.end - part.start) / 1000, 0);
}

function sleepRecords(metric: Loose, place: string, out: HaeRecords): void {
  const points = Array.isArray(metric.data) ? metric.data : [];
  const segmented: Array<{ point: Loose; origin: string }> = [];
  for (const [index, point] of points.entries()) {
    const origin = `${place}.data[${index}]`;
    if (!isObject(point)) skip(out, origin, '(record)', 'must be an object');
    else if ('startDate' in point || 'endDate' in point) segmented.push({ point, origin });
    else aggregatedSleep(point, origin, out);
  }
  if (segmented.length > 0) segmentedSleep(segmented, place, out);
}

function workoutRecord(workout: unknown, origin: string, out: HaeRecords): void {
  if (!isObject(workout)) {
    skip(out, origin, '(record)', 'must be an object');
    return;
  }
  const start = parseHaeTime(workout.start);
  if (!start) {
    skip(out, origin, 'start', HAE_TIME_RULE);
    return;
  }
  const end = parseHaeTime(workout.end) ?? null;
  const name = str(workout.name) ?? 'workout';
  // Version 2 workouts carry an id; version 1 ones do not, so name and start identify them.
  const sourceId = str(workout.id) ?? `${name}|${start}`;
  const heartRate = isObject(workout.heartRate) ? workout.heartRate : {};
  const series = heartRateSeries(workout);
  const duration = num(workout.duration) ?? (end ? (Date.parse(end) - Date.parse(start)) / 1000 : undefined);
  emit(out, out.workouts, {
    source_id: sourceId,
    sport: name.toLowerCase().replace(/[^a-z0-9]+/g, '_').replace(/^_|_$/g, ''),
    start_at: start,
    end_at: end,
    duration_s: duration ?? null,
    energy_kcal: kcal(workout.activeEnergyBurned) ?? kcal(workout.activeEnergy) ?? null,
    distance_m: metres(workout.distance) ?? null,
    avg_hr: qtyOf(workout.avgHeartRate) ?? qtyOf(heartRate.avg) ?? (series.length ? series.reduce((a, b) => a + b, 0) / series.length : null),
    max_hr: qtyOf(workout.maxHeartRate) ?? qtyOf(heartRate.max) ?? (series.length ? Math.max(...series) : null),
    strain: null,
  }, origin);
}

export function recordsFromHae(body: unknown): HaeRecords {
  const out: HaeRecords = { samples: [], workouts: [], sleepSessions: [], skipped: 0, rejected: [], origins: new WeakMap() };
  const data = isObject(body) && isObject(body.data) ? body.data : {};
  for (const [index, metric] of (Array.isArray(data.metrics) ? data.metrics : []).entries()) {
    const place = `data.metrics[${index}]`;
    if (!isObject(metric)) skip(out, place, '(record)', 'must be an object');
    else if (metric.name === 'sleep_analysis') sleepRecords(metric, place, out);
    else sampleRecords(metric, place, out);
  }
  for (const [index, workout] of (Array.isArray(data.workouts) ? data.workouts : []).entries()) workoutRecord(workout, `data.workouts[${index}]`, out);
  return out;
}
