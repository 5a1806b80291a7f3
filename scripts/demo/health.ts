import { createRandom, dayStart, isoInstant, DAY_MS } from './random.ts';

const HOUR = 3_600_000;
const SPORTS = ['running', 'cycling', 'strength_training', 'yoga', 'walking'] as const;

/** A year of daily samples, nightly sleep and a few workouts a week. */
export function healthData(end: number) {
  const random = createRandom(202);
  const samples: Array<Record<string, unknown>> = [];
  const sleep: Array<Record<string, unknown>> = [];
  const workouts: Array<Record<string, unknown>> = [];
  for (let day = 364; day >= 0; day -= 1) {
    const start = dayStart(end, day);
    const stamp = (metric: string) => `${metric}-${day}`;
    samples.push(
      { source_id: stamp('steps'), metric: 'step_count', value: Math.round(random.normal(8500, 3000)), unit: 'count', start_at: isoInstant(start), end_at: isoInstant(start + DAY_MS), device: 'Apple Watch' },
      { source_id: stamp('rhr'), metric: 'resting_heart_rate', value: Math.round(random.normal(58, 4)), unit: 'count/min', start_at: isoInstant(start), end_at: isoInstant(start + DAY_MS), device: 'Apple Watch' },
      { source_id: stamp('energy'), metric: 'active_energy', value: Math.round(random.normal(520, 150)), unit: 'kcal', start_at: isoInstant(start), end_at: isoInstant(start + DAY_MS), device: 'Apple Watch' },
    );
    if (day % 7 === 0) samples.push({ source_id: stamp('mass'), metric: 'body_mass', value: Number(random.normal(74, 0.8).toFixed(1)), unit: 'kg', start_at: isoInstant(start + 7 * HOUR), end_at: isoInstant(start + 7 * HOUR), device: 'Withings Scale' });
    const bed = start - 2 * HOUR + random.int(0, 90) * 60_000;
    const inBed = random.int(6 * 3600, 9 * 3600);
    const awake = random.int(10 * 60, 50 * 60);
    const asleep = inBed - awake;
    const deep = Math.round(asleep * 0.18);
    const rem = Math.round(asleep * 0.22);
    sleep.push({ source_id: `sleep-${day}`, start_at: isoInstant(bed), end_at: isoInstant(bed + inBed * 1000), in_bed_s: inBed, asleep_s: asleep, rem_s: rem, deep_s: deep, light_s: asleep - deep - rem, awake_s: awake, efficiency_pct: Number(((asleep / inBed) * 100).toFixed(1)), score: random.int(55, 96) });
    if (random.chance(0.45)) {
      const sport = random.pick(SPORTS);
      const duration = random.int(20, 90) * 60;
      const at = start + random.int(6, 19) * HOUR;
      workouts.push({ source_id: `w-${day}`, sport, start_at: isoInstant(at), end_at: isoInstant(at + duration * 1000), duration_s: duration, energy_kcal: Math.round(duration / 60 * random.normal(9, 2)), distance_m: sport === 'running' || sport === 'cycling' || sport === 'walking' ? Math.round(duration * random.normal(sport === 'cycling' ? 7 : 2.8, 0.4)) : null, avg_hr: random.int(110, 155), max_hr: random.int(160, 185), strain: Number(random.normal(11, 3).toFixed(1)) });
    }
  }
  return { samples, sleep, workouts };
}
