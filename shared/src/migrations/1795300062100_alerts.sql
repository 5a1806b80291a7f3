-- Up Migration

-- Alerts (design 8.5, issue 41), derived by the audit-writer from audit rows and connection status. One row per
-- event, named by dedupe_key so a pass that runs twice raises it once; state new until the operator marks it seen.
CREATE TABLE activity_alerts (
  id             bigserial PRIMARY KEY,
  user_id        bigint NOT NULL,
  kind           text NOT NULL CHECK (kind IN ('first_sector', 'first_object', 'refusal_burst', 'volume_spike', 'needs_person')),
  agent_id       text,
  sector         text,
  object         text,
  connection_id  uuid,
  detail         jsonb NOT NULL DEFAULT '{}',
  occurred_at    timestamptz NOT NULL,
  dedupe_key     text NOT NULL,
  state          text NOT NULL DEFAULT 'new' CHECK (state IN ('new', 'seen')),
  created_at     timestamptz NOT NULL DEFAULT now(),
  seen_at        timestamptz,
  UNIQUE (user_id, dedupe_key)
);

-- The last connection status the alert pass saw, so that entering needs_sign_in raises one alert.
CREATE TABLE activity_connection_states (
  connection_id  uuid PRIMARY KEY,
  status         text NOT NULL,
  changed_at     timestamptz NOT NULL DEFAULT now()
);

-- Down Migration

DROP TABLE activity_connection_states;
DROP TABLE activity_alerts;
