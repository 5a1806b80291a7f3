-- Up Migration

-- Audit rows that were lost, counted where a Redis restart cannot take the counts with it (design 1:
-- "each counted and logged"). One counter per process kind and reason, added to atomically.
CREATE TABLE audit_drops (
  source     text NOT NULL,
  reason     text NOT NULL,
  rows       bigint NOT NULL DEFAULT 0 CHECK (rows >= 0),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (source, reason)
);

-- The last sequence number the audit-writer has accounted for, per producer (one producer per process
-- start). Rows are numbered as Redis takes them, so a gap between one flush and the next is rows that
-- were in Redis when it lost its data.
CREATE TABLE audit_producer_marks (
  producer_id text PRIMARY KEY,
  max_seq     bigint NOT NULL CHECK (max_seq >= 0),
  updated_at  timestamptz NOT NULL DEFAULT now()
);

-- Down Migration

DROP TABLE audit_producer_marks;
DROP TABLE audit_drops;
