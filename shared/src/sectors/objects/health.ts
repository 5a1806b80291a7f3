import { alsoReportedByField, commonFields, duplicateOfField, field, type ObjectDef } from '../catalogue-types.ts';

const scorePendingField = (what: string, fields: string) =>
  field('score_pending', 'boolean', `True while the provider has reported this ${what} but not scored it yet (WHOOP's PENDING_SCORE): ${fields} are null until a later sync brings the score.`, {
    nullable: false,
    defaultValue: false,
  });

export const healthSample: ObjectDef = {
  name: 'health.sample',
  sector: 'health',
  table: 'health_samples',
  description: 'A measured health quantity over an interval: steps, heart rate, energy, weight, …',
  fields: [
    ...commonFields(),
    field('metric', 'string', 'What was measured, e.g. step_count, heart_rate, active_energy, body_mass.', { nullable: false, categorical: true }),
    field('value', 'number', 'The measured value, in unit.'),
    field('unit', 'string', 'Unit of value, e.g. count, count/min, kcal, kg.', { categorical: true }),
    field('start_at', 'timestamp', 'Start of the measured interval (UTC).'),
    field('end_at', 'timestamp', 'End of the measured interval (UTC).'),
    field('device', 'string', 'Device that measured it, when known.', { categorical: true }),
    alsoReportedByField('sample', 'health_samples', true),
  ],
  notes: [
    'Cumulative metrics (steps, distance, energy) may be summed; discrete ones (heart rate, body mass) may only be averaged, or min/max taken.',
    'Always read unit: energy may be kcal or kJ depending on the source; 1 kcal = 4.184 kJ.',
    'Times are UTC instants; a day in the person\'s time zone does not start at 00:00Z.',
    'Two sources can report the same metric over the same interval: also_reported_by names the other connections. Which source to count: step_count, distance and energy metrics from one connection only (filter connection_id; the phone app\'s totals already merge its watch\'s); recovery_score, heart_rate_variability_rmssd and skin_temperature come only from the wearable (WHOOP); for resting_heart_rate and oxygen_saturation pick one connection and average within it.',
  ],
  fieldDocs: {
    value: 'In the row\'s unit; never sum discrete metrics such as heart_rate.',
    unit: 'kcal versus kJ matters for energy metrics.',
    start_at: 'UTC; convert before grouping by local day.',
  },
  spans: [{ start: 'start_at', end: 'end_at' }],
  defaultOrder: [{ field: 'start_at', direction: 'desc' }],
};

export const healthWorkout: ObjectDef = {
  name: 'health.workout',
  sector: 'health',
  table: 'health_workouts',
  description: 'A workout: sport, duration, energy, distance and heart rate.',
  fields: [
    ...commonFields(),
    field('sport', 'string', 'Activity, e.g. running, cycling, strength_training.', { categorical: true }),
    field('start_at', 'timestamp', 'Start (UTC).'),
    field('end_at', 'timestamp', 'End (UTC).'),
    field('duration_s', 'number', 'Duration.', { unit: 's' }),
    field('energy_kcal', 'number', 'Active energy burned.', { unit: 'kcal' }),
    field('distance_m', 'number', 'Distance covered.', { unit: 'm' }),
    field('avg_hr', 'number', 'Average heart rate.', { unit: 'count/min' }),
    field('max_hr', 'number', 'Maximum heart rate.', { unit: 'count/min' }),
    field('strain', 'number', 'Provider strain score (0–21 on the wearable scale), when reported.'),
    scorePendingField('workout', 'strain, energy_kcal, distance_m, avg_hr and max_hr'),
    duplicateOfField('workout', 'health_workouts'),
    alsoReportedByField('workout', 'health_workouts'),
  ],
  notes: [
    'energy_kcal is always kilocalories: sources that report kilojoules are converted (1 kcal = 4.184 kJ).',
    'A watch and a phone app can both report one workout: each is a row. duplicate_of names the row that counts instead (a row of another connection overlapping in time); filter duplicate_of is_null true to count each workout once.',
    'duration_s is seconds, even where a source reports milliseconds or minutes.',
    'distance_m is metres.',
    'score_pending true: the wearable has not scored the workout yet; its strain, energy and heart rate are null for now, not zero.',
    'Which source to count: each workout once (duplicate_of is_null true); strain only from the wearable (WHOOP), the one source that scores it.',
  ],
  fieldDocs: {
    energy_kcal: 'Kilocalories (converted from kJ where the source uses kJ).',
    duration_s: 'Seconds.',
    strain: 'Wearable-specific score; null for other sources.',
  },
  spans: [{ start: 'start_at', end: 'end_at' }],
  defaultOrder: [{ field: 'start_at', direction: 'desc' }],
};

export const healthSleepSession: ObjectDef = {
  name: 'health.sleep_session',
  sector: 'health',
  table: 'health_sleep_sessions',
  description: 'One night (or nap) of sleep with its stages.',
  fields: [
    ...commonFields(),
    field('start_at', 'timestamp', 'When the session started (UTC).'),
    field('end_at', 'timestamp', 'When it ended (UTC).'),
    field('in_bed_s', 'number', 'Time in bed.', { unit: 's' }),
    field('asleep_s', 'number', 'Time asleep (all stages).', { unit: 's' }),
    field('rem_s', 'number', 'REM sleep.', { unit: 's' }),
    field('deep_s', 'number', 'Deep (slow-wave) sleep.', { unit: 's' }),
    field('light_s', 'number', 'Light / core sleep.', { unit: 's' }),
    field('awake_s', 'number', 'Time awake during the session.', { unit: 's' }),
    field('efficiency_pct', 'number', 'asleep / in bed, as a percentage.', { unit: '%' }),
    field('score', 'number', 'Provider sleep score (0–100), when reported.'),
    scorePendingField('night', 'score, in_bed_s, asleep_s, the stages, awake_s and efficiency_pct'),
    duplicateOfField('night', 'health_sleep_sessions'),
    alsoReportedByField('night', 'health_sleep_sessions'),
  ],
  notes: [
    'All durations are seconds, even where a source reports milliseconds.',
    'A night usually starts before local midnight: select by end_at to get "last night", or start_at overlaps yesterday for every session touching that day.',
    'A wearable and a phone app can both report one night: each is a row. duplicate_of names the row that counts instead (a row of another connection overlapping in time); filter duplicate_of is_null true to count each night once.',
    'score_pending true: the wearable has reported the night but not scored it yet; its score, durations and stages are null for now, which never means no sleep. Read it again after the next sync.',
    'Which source to count: time asleep, in bed and stages from one row per night (duplicate_of is_null true; also_reported_by names the other sources); score only from the wearable (WHOOP), the one source that scores nights.',
  ],
  fieldDocs: {
    asleep_s: 'Seconds; rem_s + deep_s + light_s when stages are known.',
    start_at: 'UTC; the local evening of the night before.',
  },
  spans: [{ start: 'start_at', end: 'end_at' }],
  defaultOrder: [{ field: 'start_at', direction: 'desc' }],
};
