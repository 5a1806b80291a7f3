-- Up Migration
-- A wearable reports a night or a workout before it has scored it (WHOOP's PENDING_SCORE): the row is
-- stored with its score fields null, and score_pending says they are coming rather than absent.
ALTER TABLE health_sleep_sessions ADD COLUMN score_pending boolean NOT NULL DEFAULT false;
ALTER TABLE health_workouts ADD COLUMN score_pending boolean NOT NULL DEFAULT false;

-- Samples two sources report for the same metric over overlapping intervals are marked at read time
-- (also_reported_by); this serves that lookup as the span indexes serve nights and workouts.
CREATE INDEX health_samples_metric_span_idx ON health_samples (metric, start_at, end_at);

-- Down Migration
DROP INDEX health_samples_metric_span_idx;
ALTER TABLE health_workouts DROP COLUMN score_pending;
ALTER TABLE health_sleep_sessions DROP COLUMN score_pending;
