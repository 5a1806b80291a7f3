-- Up Migration

-- Notifications of alerts (issue 41, design 8.5): off until the operator saves a destination. The destination URL
-- is a secret, sealed with the credentials key like a source's credentials and never shown again.
CREATE TABLE alert_destination (
  user_id     bigint PRIMARY KEY,
  kind        text NOT NULL CHECK (kind IN ('ntfy', 'apprise')),
  url_sealed  bytea NOT NULL,
  saved_at    timestamptz NOT NULL DEFAULT now()
);

-- Each alert's sending by the sync-worker: tries so far, when to try again, when it went out.
ALTER TABLE activity_alerts
  ADD COLUMN notify_attempts  integer NOT NULL DEFAULT 0,
  ADD COLUMN notify_next_at   timestamptz,
  ADD COLUMN notified_at      timestamptz,
  ADD COLUMN notify_error     text;

-- The daily digest of a UTC day, once.
CREATE TABLE alert_digests (
  day          date PRIMARY KEY,
  attempts     integer NOT NULL DEFAULT 0,
  next_at      timestamptz,
  sent_at      timestamptz,
  last_error   text
);

-- Down Migration

DROP TABLE alert_digests;
ALTER TABLE activity_alerts DROP COLUMN notify_attempts, DROP COLUMN notify_next_at, DROP COLUMN notified_at, DROP COLUMN notify_error;
DROP TABLE alert_destination;
