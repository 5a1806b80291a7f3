-- Up Migration

-- The single operator (spec 1.1). Every grant, connection, setting and audit row belongs to it.
CREATE TABLE users (
  id          bigint PRIMARY KEY,
  name        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
INSERT INTO users (id, name) VALUES (1, 'operator');

-- Agent grants (spec 2.2). The key itself is never stored; `generation` is bumped on every grant change
-- so that a gateway can tell whether a live session still matches its grant (design 4.7).
CREATE TABLE agents (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  user_id     bigint NOT NULL REFERENCES users (id),
  name        text NOT NULL,
  key_hash    bytea NOT NULL UNIQUE CHECK (octet_length(key_hash) = 32),
  sectors     text[] NOT NULL DEFAULT '{}',
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz,
  expires_at  timestamptz,
  generation  bigint NOT NULL DEFAULT 0,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (user_id, name)
);

-- One connection per sector a provider sign-in covers (spec 2.4). The row fixes user, sector and table.
CREATE TABLE connections (
  id                     uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id                bigint NOT NULL REFERENCES users (id),
  provider               text NOT NULL,
  sector                 text NOT NULL CHECK (sector IN ('finance', 'health', 'mail', 'contacts', 'calendar', 'home')),
  display_name           text NOT NULL DEFAULT '',
  status                 text NOT NULL DEFAULT 'active'
                           CHECK (status IN ('active', 'paused', 'error', 'needs_sign_in')),
  credentials            bytea,            -- AES-256-GCM sealed (design 4.9)
  ingest_secret_hash     bytea,            -- SHA-256 of the push secret; null when none is set
  sync_interval_minutes  integer CHECK (sync_interval_minutes IS NULL OR sync_interval_minutes > 0),
  sync_cursor            jsonb,
  last_synced_at         timestamptz,
  last_error             text,
  created_at             timestamptz NOT NULL DEFAULT now(),
  updated_at             timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE settings (
  user_id     bigint NOT NULL REFERENCES users (id),
  name        text NOT NULL,
  value       jsonb NOT NULL,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (user_id, name)
);

-- The audit record (spec 2.3). Append-only; exactly one index, on (user_id, created_at DESC), so no
-- primary key (which would add a second index). `id` still orders rows that share one flush instant.
CREATE TABLE audit_log (
  id            bigserial NOT NULL,
  user_id       bigint NOT NULL,
  agent_id      text,
  tool          text NOT NULL,
  sector        text,
  decision      text NOT NULL CHECK (decision IN ('allow', 'deny')),
  deny_reason   text,
  args          jsonb NOT NULL DEFAULT '{}',
  result_count  integer NOT NULL DEFAULT 0,
  outcome       text NOT NULL CHECK (outcome IN ('ok', 'error')),
  request_id    text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_log_user_created_idx ON audit_log (user_id, created_at DESC);

-- The ten cache tables (design 4.2). Every row carries the gateway id, its connection, the provider kind,
-- the source's own id and when it was synced; upserts are idempotent on (connection_id, source_id).

CREATE TABLE finance_accounts (
  id                  text PRIMARY KEY DEFAULT gen_random_uuid()::text,
  connection_id       uuid NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  source              text NOT NULL,
  source_id           text NOT NULL,
  synced_at           timestamptz NOT NULL DEFAULT now(),
  institution_name    text,
  institution_domain  text,
  name                text,
  mask                text,
  type                text,
  subtype             text,
  currency            text,
  balance_current     numeric,
  balance_available   numeric,
  balance_limit       numeric,
  balance_as_of       timestamptz,
  consent_expires_at  timestamptz,
  UNIQUE (connection_id, source_id)
);

CREATE TABLE finance_transactions (
  id             text PRIMARY KEY DEFAULT gen_random_uuid()::text,
  connection_id  uuid NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  source         text NOT NULL,
  source_id      text NOT NULL,
  synced_at      timestamptz NOT NULL DEFAULT now(),
  account_id     text,
  posted_on      date,
  authorized_on  date,
  amount         numeric NOT NULL,   -- negative: money leaves the account, whatever the provider's sign
  currency       text,
  description    text,
  merchant_name  text,
  category       text,
  pending        boolean NOT NULL DEFAULT false,
  UNIQUE (connection_id, source_id)
);

CREATE TABLE finance_holdings (
  id             text PRIMARY KEY DEFAULT gen_random_uuid()::text,
  connection_id  uuid NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  source         text NOT NULL,
  source_id      text NOT NULL,
  synced_at      timestamptz NOT NULL DEFAULT now(),
  account_id     text,
  security_name  text,
  ticker         text,
  quantity       numeric,
  price          numeric,
  value          numeric,
  cost_basis     numeric,
  currency       text,
  as_of          timestamptz,
  UNIQUE (connection_id, source_id)
);

CREATE TABLE health_samples (
  id             text PRIMARY KEY DEFAULT gen_random_uuid()::text,
  connection_id  uuid NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  source         text NOT NULL,
  source_id      text NOT NULL,
  synced_at      timestamptz NOT NULL DEFAULT now(),
  metric         text NOT NULL,
  value          double precision,
  unit           text,
  start_at       timestamptz,
  end_at         timestamptz,
  device         text,
  UNIQUE (connection_id, source_id)
);

CREATE TABLE health_workouts (
  id             text PRIMARY KEY DEFAULT gen_random_uuid()::text,
  connection_id  uuid NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  source         text NOT NULL,
  source_id      text NOT NULL,
  synced_at      timestamptz NOT NULL DEFAULT now(),
  sport          text,
  start_at       timestamptz,
  end_at         timestamptz,
  duration_s     double precision,
  energy_kcal    double precision,
  distance_m     double precision,
  avg_hr         double precision,
  max_hr         double precision,
  strain         double precision,
  UNIQUE (connection_id, source_id)
);

CREATE TABLE health_sleep_sessions (
  id              text PRIMARY KEY DEFAULT gen_random_uuid()::text,
  connection_id   uuid NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  source          text NOT NULL,
  source_id       text NOT NULL,
  synced_at       timestamptz NOT NULL DEFAULT now(),
  start_at        timestamptz,
  end_at          timestamptz,
  in_bed_s        double precision,
  asleep_s        double precision,
  rem_s           double precision,
  deep_s          double precision,
  light_s         double precision,
  awake_s         double precision,
  efficiency_pct  double precision,
  score           double precision,
  UNIQUE (connection_id, source_id)
);

-- Envelopes only: no body, no snippet, no attachment is ever cached (spec 2.1).
CREATE TABLE mail_messages (
  id               text PRIMARY KEY DEFAULT gen_random_uuid()::text,
  connection_id    uuid NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  source           text NOT NULL,
  source_id        text NOT NULL,
  synced_at        timestamptz NOT NULL DEFAULT now(),
  account          text,
  folder           text,
  labels           text[] NOT NULL DEFAULT '{}',
  thread_id        text,
  "from"           text,
  "to"             text[] NOT NULL DEFAULT '{}',
  cc               text[] NOT NULL DEFAULT '{}',
  subject          text,
  received_at      timestamptz,
  is_read          boolean,
  has_attachments  boolean,
  size_bytes       integer,
  UNIQUE (connection_id, source_id)
);

CREATE TABLE contacts_entries (
  id             text PRIMARY KEY DEFAULT gen_random_uuid()::text,
  connection_id  uuid NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  source         text NOT NULL,
  source_id      text NOT NULL,
  synced_at      timestamptz NOT NULL DEFAULT now(),
  display_name   text,
  given_name     text,
  family_name    text,
  organization   text,
  title          text,
  emails         jsonb NOT NULL DEFAULT '[]',
  phones         jsonb NOT NULL DEFAULT '[]',
  addresses      jsonb NOT NULL DEFAULT '[]',
  birthday       date,
  updated_at     timestamptz,
  UNIQUE (connection_id, source_id)
);

-- One row per occurrence; all-day events use start_date/end_date, timed ones start_at/end_at.
CREATE TABLE calendar_events (
  id             text PRIMARY KEY DEFAULT gen_random_uuid()::text,
  connection_id  uuid NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  source         text NOT NULL,
  source_id      text NOT NULL,
  synced_at      timestamptz NOT NULL DEFAULT now(),
  event_uid      text,
  recurrence_id  text,
  calendar       text,
  title          text,
  start_at       timestamptz,
  end_at         timestamptz,
  all_day        boolean NOT NULL DEFAULT false,
  start_date     date,
  end_date       date,
  timezone       text,
  location       text,
  status         text,
  organizer      text,
  attendees      jsonb NOT NULL DEFAULT '[]',
  UNIQUE (connection_id, source_id)
);

CREATE TABLE home_entities (
  id             text PRIMARY KEY DEFAULT gen_random_uuid()::text,
  connection_id  uuid NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  source         text NOT NULL,
  source_id      text NOT NULL,
  synced_at      timestamptz NOT NULL DEFAULT now(),
  entity_id      text NOT NULL,
  domain         text NOT NULL,
  friendly_name  text,
  state          text,
  attributes     jsonb NOT NULL DEFAULT '{}',
  last_changed   timestamptz,
  last_updated   timestamptz,
  UNIQUE (connection_id, source_id)
);

-- Down Migration
DROP TABLE home_entities, calendar_events, contacts_entries, mail_messages, health_sleep_sessions,
  health_workouts, health_samples, finance_holdings, finance_transactions, finance_accounts;
DROP TABLE audit_log, settings, connections, agents, users;
