import { z } from 'zod';

/** The source id prefix of every sample a recovery gives (one row per metric). */
const DEVICE = 'WHOOP';
const KJ_PER_KCAL = 4.184;

const scoreState = z.enum(['SCORED', 'PENDING_SCORE', 'UNSCORABLE']);
const instant = z.iso.datetime({ offset: true });

export const WhoopSleepSchema = z.looseObject({
  id: z.string().min(1),
  start: instant,
  end: instant,
  nap: z.boolean().optional(),
  score_state: scoreState,
  score: z
    .looseObject({
      stage_summary: z.looseObject({
        total_in_bed_time_milli: z.number(),
        total_awake_time_milli: z.number(),
        total_light_sleep_time_milli: z.number(),
        total_slow_wave_sleep_time_milli: z.number(),
        total_rem_sleep_time_milli: z.number(),
      }),
      sleep_performance_percentage: z.number().nullish(),
      sleep_efficiency_percentage: z.number().nullish(),
    })
    .optional(),
});
export type WhoopSleep = z.infer<typeof WhoopSleepSchema>;

export const WhoopWorkoutSchema = z.looseObject({
  id: z.string().min(1),
  start: instant,
  end: instant,
  sport_name: z.string().optional(),
  score_state: scoreState,
  score: z
    .looseObject({
      strain: z.number().nullish(),
      average_heart_rate: z.number().nullish(),
      max_heart_rate: z.number().nullish(),
      kilojoule: z.number().nullish(),
      distance_meter: z.number().nullish(),
    })
    .optional(),
});
export type WhoopWorkout = z.infer<typeof WhoopWorkoutSchema>;

export const WhoopRecoverySchema = z.looseObject({
  cycle_id: z.union([z.number().int(), z.string().regex(/^\d+$/)]).transform(String),
  sleep_id: z.string().optional(),
  created_at: instant,
  score_state: scoreState,
  score: z
    .looseObject({
      recovery_score: z.number().nullish(),
      resting_heart_rate: z.number().nullish(),
      hrv_rmssd_milli: z.number().nullish(),
      spo2_percentage: z.number().nullish(),
      skin_temp_celsius: z.number().nullish(),
    })
    .optional(),
});
export type WhoopRecovery = z.infer<typeof WhoopRecoverySchema>;

const seconds = (milli: number) => Math.round(milli) / 1000;
const iso = (value: string) => new Date(value).toISOString();

/** `health.sleep_session`: stage durations from milliseconds to seconds; asleep is the sum of the stages. */
export function sleepRecord(sleep: WhoopSleep) {
  const stages = sleep.score_state === 'SCORED' ? sleep.score?.stage_summary : undefined;
  return {
    source_id: sleep.id,
    start_at: iso(sleep.start),
    end_at: iso(sleep.end),
    in_bed_s: stages ? seconds(stages.total_in_bed_time_milli) : null,
    asleep_s: stages ? seconds(stages.total_light_sleep_time_milli + stages.total_slow_wave_sleep_time_milli + stages.total_rem_sleep_time_milli) : null,
    rem_s: stages ? seconds(stages.total_rem_sleep_time_milli) : null,
    deep_s: stages ? seconds(stages.total_slow_wave_sleep_time_milli) : null,
    light_s: stages ? seconds(stages.total_light_sleep_time_milli) : null,
    awake_s: stages ? seconds(stages.total_awake_time_milli) : null,
    efficiency_pct: sleep.score_state === 'SCORED' ? (sleep.score?.sleep_efficiency_percentage ?? null) : null,
    score: sleep.score_state === 'SCORED' ? (sleep.score?.sleep_performance_percentage ?? null) : null,
    // Reference §3.3: a PENDING_SCORE record is updated later; its nulls are not yet known, not absent.
    score_pending: sleep.score_state === 'PENDING_SCORE',
  };
}

/** `health.workout`: kilojoules to kilocalories, the duration in seconds. */
export function workoutRecord(workout: WhoopWorkout) {
  const score = workout.score_state === 'SCORED' ? workout.score : undefined;
  return {
    source_id: workout.id,
    sport: workout.sport_name ?? null,
    start_at: iso(workout.start),
    end_at: iso(workout.end),
    duration_s: seconds(Date.parse(workout.end) - Date.parse(workout.start)),
    energy_kcal: score?.kilojoule == null ? null : Math.round((score.kilojoule / KJ_PER_KCAL) * 1000) / 1000,
    distance_m: score?.distance_meter ?? null,
    avg_hr: score?.average_heart_rate ?? null,
    max_hr: score?.max_heart_rate ?? null,
    strain: score?.strain ?? null,
    score_pending: workout.score_state === 'PENDING_SCORE',
  };
}

const RECOVERY_METRICS = [
  ['recovery_score', 'recovery_score', '%'],
  ['resting_heart_rate', 'resting_heart_rate', 'count/min'],
  ['hrv_rmssd_milli', 'heart_rate_variability_rmssd', 'ms'],
  ['spo2_percentage', 'oxygen_saturation', '%'],
  ['skin_temp_celsius', 'skin_temperature', 'degC'],
] as const;

/**
 * `health.sample` rows of one scored recovery, one per metric it carries. A recovery has no interval of
 * its own: it is measured over the sleep it follows, so the sleep's interval is used when known (the
 * record's creation time otherwise). Recoveries key on their cycle, not an id of their own.
 */
export function recoverySamples(recovery: WhoopRecovery, sleeps: ReadonlyMap<string, WhoopSleep>) {
  if (recovery.score_state !== 'SCORED' || !recovery.score) return [];
  const score = recovery.score;
  const sleep = recovery.sleep_id ? sleeps.get(recovery.sleep_id) : undefined;
  const start_at = iso(sleep?.start ?? recovery.created_at);
  const end_at = iso(sleep?.end ?? recovery.created_at);
  return RECOVERY_METRICS.flatMap(([key, metric, unit]) => {
    const value = score[key];
    return typeof value === 'number' ? [{ source_id: `recovery:${recovery.cycle_id}:${metric}`, metric, value, unit, start_at, end_at, device: DEVICE }] : [];
  });
}
