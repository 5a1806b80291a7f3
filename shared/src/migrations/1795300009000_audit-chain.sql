-- Up Migration

-- A hash chain over the audit record (issue 22). Each row the audit-writer inserts carries its place in
-- the chain (1, 2, 3…) and SHA-256 of the previous row's hash and its own canonical content. Both are
-- null on rows written before this migration: those rows are not covered, and the chain starts after
-- the last of them. Nullable columns without a default are added without rewriting the table, and no
-- index is added (spec 2.3: one index on audit_log).
ALTER TABLE audit_log
  ADD COLUMN chain_seq bigint,
  ADD COLUMN row_hash bytea;

-- The chain's start (a recorded anchor) and its head, one row. The writer locks this row for each flush,
-- so the chain's order is the order in which flushes commit even with two writers, and the head
-- survives restarts. Rows of a failed flush never reach the head: a lost batch leaves no hole.
CREATE TABLE audit_chain (
  singleton        boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  -- The last row written before the chain, in the ledger's order (created_at, id); null when there was none.
  start_id         bigint,
  start_created_at timestamptz,
  legacy_rows      bigint NOT NULL,
  start_hash       bytea NOT NULL,
  head_seq         bigint NOT NULL DEFAULT 0 CHECK (head_seq >= 0),
  head_id          bigint,
  head_created_at  timestamptz,
  head_hash        bytea NOT NULL,
  updated_at       timestamptz NOT NULL DEFAULT now()
);

INSERT INTO audit_chain (start_id, start_created_at, legacy_rows, start_hash, head_id, head_created_at, head_hash)
SELECT last.id, last.created_at, (SELECT count(*) FROM audit_log), seed.hash, last.id, last.created_at, seed.hash
FROM (SELECT sha256(convert_to('pcg-audit-chain.v1', 'UTF8')) AS hash) AS seed
LEFT JOIN LATERAL (
  SELECT id, created_at FROM audit_log ORDER BY created_at DESC, id DESC LIMIT 1
) AS last ON true;

-- Down Migration

DROP TABLE audit_chain;
ALTER TABLE audit_log DROP COLUMN row_hash, DROP COLUMN chain_seq;
