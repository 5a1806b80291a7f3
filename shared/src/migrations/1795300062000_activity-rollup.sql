-- Up Migration

-- Activity at a glance (design 8.5, issue 41): a daily rollup kept beside audit_log, which keeps its one index
-- (spec 2.3). Filled by the audit-writer from the rows after `activity_progress`'s mark, and from every existing
-- row on first start. Days are UTC days of the rows' created_at.

-- Calls per UTC day x agent x sector x tool x decision. agent_id is null for ingest and refused initialize
-- rows, sector null for calls that touched none, as in audit_log.
CREATE TABLE activity_daily (
  user_id   bigint NOT NULL,
  day       date NOT NULL,
  agent_id  text,
  sector    text,
  tool      text NOT NULL,
  decision  text NOT NULL CHECK (decision IN ('allow', 'deny')),
  calls     bigint NOT NULL,
  CONSTRAINT activity_daily_key UNIQUE NULLS NOT DISTINCT (user_id, day, agent_id, sector, tool, decision)
);

-- An agent's first and last allowed use of a sector.
CREATE TABLE activity_sector_uses (
  user_id   bigint NOT NULL,
  agent_id  text NOT NULL,
  sector    text NOT NULL,
  first_at  timestamptz NOT NULL,
  last_at   timestamptz NOT NULL,
  calls     bigint NOT NULL,
  PRIMARY KEY (user_id, agent_id, sector)
);

-- An agent's first and last allowed use of an object (the call's `object` argument). object is null when the
-- row's args were cut to "[truncated]": the object is unknown.
CREATE TABLE activity_object_uses (
  user_id   bigint NOT NULL,
  agent_id  text NOT NULL,
  sector    text NOT NULL,
  object    text,
  first_at  timestamptz NOT NULL,
  last_at   timestamptz NOT NULL,
  calls     bigint NOT NULL,
  CONSTRAINT activity_object_uses_key UNIQUE NULLS NOT DISTINCT (user_id, agent_id, sector, object)
);

-- How far the rollup has read audit_log: the last row taken, by (created_at, id), which is the order the
-- writer commits rows in (the chain's head is locked while a batch gets its ids and created_at). The baseline
-- is the newest row when the rollup first ran: rows up to it are counted but raise no alert.
CREATE TABLE activity_progress (
  user_id              bigint PRIMARY KEY,
  last_created_at      timestamptz,
  last_id              bigint,
  baseline_created_at  timestamptz,
  baseline_id          bigint,
  updated_at       timestamptz NOT NULL DEFAULT now()
);

-- Down Migration

DROP TABLE activity_progress;
DROP TABLE activity_object_uses;
DROP TABLE activity_sector_uses;
DROP TABLE activity_daily;
