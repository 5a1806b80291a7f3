-- Up Migration

-- Accent- and case-insensitive contains and starts_with on text (issue 20: "Muller" finds "Müller").
-- unaccent ships with Postgres's contrib modules (the embedded-postgres binaries, Debian's and the
-- official image's packages) and is a trusted extension, so a database owner may create it.
CREATE EXTENSION IF NOT EXISTS unaccent;

-- The sender of a message as two fields, so senders group by address whatever name they sent under:
-- the address inside "<…>" (lower-cased), or the whole value when it is a bare address; the name before it.
ALTER TABLE mail_messages
  ADD COLUMN from_address text GENERATED ALWAYS AS (
    CASE
      WHEN "from" ~ '<[^<>]+>\s*$' THEN lower(btrim(substring("from" from '<([^<>]+)>\s*$')))
      WHEN "from" ~ '^\s*[^\s<>@]+@[^\s<>@]+\s*$' THEN lower(btrim("from"))
    END
  ) STORED,
  ADD COLUMN from_name text GENERATED ALWAYS AS (
    CASE
      WHEN "from" ~ '<[^<>]+>\s*$' THEN nullif(btrim(regexp_replace("from", '<[^<>]+>\s*$', ''), E' \t"'''), '')
    END
  ) STORED;

CREATE INDEX mail_messages_from_address_idx ON mail_messages (from_address);

-- Two sources reporting the same night or workout are told apart at read time by overlapping spans of
-- other connections (see duplicate_of); these serve that lookup.
CREATE INDEX health_sleep_sessions_span_idx ON health_sleep_sessions (start_at, end_at);
CREATE INDEX health_workouts_span_idx ON health_workouts (start_at, end_at);

-- Down Migration

DROP INDEX health_workouts_span_idx;
DROP INDEX health_sleep_sessions_span_idx;
DROP INDEX mail_messages_from_address_idx;
ALTER TABLE mail_messages DROP COLUMN from_name, DROP COLUMN from_address;
DROP EXTENSION IF EXISTS unaccent;
