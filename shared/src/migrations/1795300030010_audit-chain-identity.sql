-- Up Migration

-- The audit chain's identity (issue 36): a random id and the hash of its first row, kept with the head
-- and written into every anchor, so an anchor of another chain (a DATA_DIR used with a second database)
-- is told apart from a chain cut short. The writer gives an empty chain a new id and records the first
-- row's hash when it writes place 1; a chain that already has rows keeps the id given here. first_keyed_seq is the place of the first row linked
-- with the chain key (null until the writer holds one): the rows before it are of the old, unkeyed chain.
-- audit_log is not changed (spec 2.3).
ALTER TABLE audit_chain
  ADD COLUMN chain_id text NOT NULL DEFAULT gen_random_uuid()::text,
  ADD COLUMN first_hash bytea,
  ADD COLUMN first_keyed_seq bigint;

UPDATE audit_chain SET first_hash = (SELECT row_hash FROM audit_log WHERE chain_seq = 1 LIMIT 1);

-- Down Migration

ALTER TABLE audit_chain DROP COLUMN first_keyed_seq, DROP COLUMN first_hash, DROP COLUMN chain_id;
