/** Records as WHOOP's v2 API serves them (reference §3.3): ISO instants, milliseconds, kilojoules. */
export type WhoopSleepRecord = {
  id: string;
  cycle_id: number;
  user_id: number;
  created_at: string;
  updated_at: string;
  start: string;
  end: string;
  timezone_offset: string;
  nap: boolean;
  score_state: 'SCORED' | 'PENDING_SCORE' | 'UNSCORABLE';
  score?: {
    stage_summary: {
      total_in_bed_time_milli: number;
      total_awake_time_milli: number;
      total_no_data_time_milli: number;
      total_light_sleep_time_milli: number;
      total_slow_wave_sleep_time_milli: number;
      total_rem_sleep_time_milli: number;
      sleep_cycle_count: number;
      disturbance_count: number;
    };
    respiratory_rate: number;
    sleep_performance_percentage: number;
    sleep_consistency_percentage: number;
    sleep_efficiency_percentage: number;
  };
};
export type WhoopWorkoutRecord = {
  id: string;
  user_id: number;
  created_at: string;
  updated_at: string;
  start: string;
  end: string;
  timezone_offset: string;
  sport_name: string;
  score_state: 'SCORED' | 'PENDING_SCORE' | 'UNSCORABLE';
  score?: { strain: number; average_heart_rate: number; max_heart_rate: number; kilojoule: number; percent_recorded: number; distance_meter?: number };
};
export type WhoopRecoveryRecord = {
  cycle_id: number;
  sleep_id: string;
  user_id: number;
  created_at: string;
  updated_at: string;
  score_state: 'SCORED' | 'PENDING_SCORE' | 'UNSCORABLE';
  score?: { user_calibrating: boolean; recovery_score: number; resting_heart_rate: number; hrv_rmssd_milli: number; spo2_percentage?: number; skin_temp_celsius?: number };
};

export const WHOOP_USER_ID = 10129;
const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();
const uuid = (kind: number, n: number) => `${kind.toString(16).padStart(8, '0')}-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;

/** The night ending on the morning `daysAgo` days before `now` (UTC): a sleep, its recovery, and an evening run the day before. */
export function whoopDay(now: number, daysAgo: number, options: { scored?: boolean } = {}) {
  const morning = Math.floor(now / (24 * HOUR)) * 24 * HOUR - daysAgo * 24 * HOUR + 6 * HOUR;
  const start = morning - 8 * HOUR;
  const cycle = 93_800_000 + Math.floor(morning / (24 * HOUR));
  const scored = options.scored ?? true;
  const sleep: WhoopSleepRecord = {
    id: uuid(1, cycle),
    cycle_id: cycle,
    user_id: WHOOP_USER_ID,
    created_at: iso(morning),
    updated_at: iso(morning),
    start: iso(start),
    end: iso(morning),
    timezone_offset: '-05:00',
    nap: false,
    score_state: scored ? 'SCORED' : 'PENDING_SCORE',
    ...(scored
      ? {
          score: {
            stage_summary: {
              total_in_bed_time_milli: 8 * HOUR,
              total_awake_time_milli: 1_800_000,
              total_no_data_time_milli: 0,
              total_light_sleep_time_milli: 12_600_000,
              total_slow_wave_sleep_time_milli: 5_400_000,
              total_rem_sleep_time_milli: 7_200_000,
              sleep_cycle_count: 4,
              disturbance_count: 9,
            },
            respiratory_rate: 15.2,
            sleep_performance_percentage: 91,
            sleep_consistency_percentage: 80,
            sleep_efficiency_percentage: 93.75,
          },
        }
      : {}),
  };
  const recovery: WhoopRecoveryRecord = {
    cycle_id: cycle,
    sleep_id: sleep.id,
    user_id: WHOOP_USER_ID,
    created_at: iso(morning),
    updated_at: iso(morning),
    score_state: scored ? 'SCORED' : 'PENDING_SCORE',
    ...(scored ? { score: { user_calibrating: false, recovery_score: 67, resting_heart_rate: 52, hrv_rmssd_milli: 61.5, spo2_percentage: 96.5, skin_temp_celsius: 33.4 } } : {}),
  };
  const runStart = start - 4 * HOUR;
  const workout: WhoopWorkoutRecord = {
    id: uuid(2, cycle),
    user_id: WHOOP_USER_ID,
    created_at: iso(runStart + HOUR),
    updated_at: iso(runStart + HOUR),
    start: iso(runStart),
    end: iso(runStart + 2_700_000),
    timezone_offset: '-05:00',
    sport_name: 'running',
    score_state: 'SCORED',
    score: { strain: 11.4, average_heart_rate: 148, max_heart_rate: 176, kilojoule: 2092, percent_recorded: 100, distance_meter: 8046.7 },
  };
  return { sleep, recovery, workout };
}
