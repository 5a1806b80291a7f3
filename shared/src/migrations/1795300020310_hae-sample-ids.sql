-- Up Migration
-- Health Auto Export samples were keyed `<metric>|<instant>|<source>`. `source` lists the devices merged into the
-- bucket, joined by `|`, and grows when another device syncs later, so a re-sent bucket became a second row and was
-- counted twice. The key is `<metric>|<instant>` now (shared/src/ingest/hae-format.ts, haeSampleId). A row is
-- re-keyed only when its id is exactly the old shape built from its own metric, start and device, so records pushed
-- in the canonical {records:[…]} form keep the ids their sender chose. Where several rows fall into one bucket, the
-- newest write is kept (the app re-sends a bucket with its latest value).
CREATE TEMPORARY TABLE hae_sample_keys AS
  SELECT s.id, s.connection_id, s.synced_at, s.metric || '|' || split_part(s.source_id, '|', 2) AS new_id
  FROM health_samples s
  JOIN connections c ON c.id = s.connection_id AND c.provider = 'health-auto-export'
  WHERE split_part(s.source_id, '|', 2) ~ '^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$'
    AND s.source_id = s.metric || '|' || split_part(s.source_id, '|', 2) || '|' || coalesce(s.device, '');

-- A row already under a new id (none before this migration, but a re-run must not break) joins its bucket too.
INSERT INTO hae_sample_keys (id, connection_id, synced_at, new_id)
  SELECT s.id, s.connection_id, s.synced_at, s.source_id
  FROM health_samples s
  WHERE (s.connection_id, s.source_id) IN (SELECT connection_id, new_id FROM hae_sample_keys);

DELETE FROM health_samples
WHERE id IN (
  SELECT id FROM (
    SELECT id, row_number() OVER (PARTITION BY connection_id, new_id ORDER BY synced_at DESC, id DESC) AS place
    FROM hae_sample_keys
  ) ranked
  WHERE place > 1
);

UPDATE health_samples s
SET source_id = k.new_id
FROM hae_sample_keys k
WHERE s.id = k.id AND s.source_id <> k.new_id;

DROP TABLE hae_sample_keys;

-- Aggregated nights were keyed `sleep|<yyyy-MM-dd>|<sleepSource>` the same way; they are keyed `sleep|<yyyy-MM-dd>` now
-- (haeNightId). Sessions joined from stage segments (`sleep|<instant>|<source>`, one per source by design) keep theirs.
CREATE TEMPORARY TABLE hae_night_keys AS
  SELECT s.id, s.connection_id, s.synced_at, 'sleep|' || split_part(s.source_id, '|', 2) AS new_id
  FROM health_sleep_sessions s
  JOIN connections c ON c.id = s.connection_id AND c.provider = 'health-auto-export'
  WHERE s.source_id ~ '^sleep\|\d{4}-\d{2}-\d{2}\|';

INSERT INTO hae_night_keys (id, connection_id, synced_at, new_id)
  SELECT s.id, s.connection_id, s.synced_at, s.source_id
  FROM health_sleep_sessions s
  WHERE (s.connection_id, s.source_id) IN (SELECT connection_id, new_id FROM hae_night_keys);

DELETE FROM health_sleep_sessions
WHERE id IN (
  SELECT id FROM (
    SELECT id, row_number() OVER (PARTITION BY connection_id, new_id ORDER BY synced_at DESC, id DESC) AS place
    FROM hae_night_keys
  ) ranked
  WHERE place > 1
);

UPDATE health_sleep_sessions s
SET source_id = k.new_id
FROM hae_night_keys k
WHERE s.id = k.id AND s.source_id <> k.new_id;

DROP TABLE hae_night_keys;

-- Down Migration
-- Nothing to undo: the merged rows cannot be told apart again, and the shorter ids are valid under the old code.
