-- Up Migration

-- Accounts two finance connections both deliver (spec 2.1): one row per pair with the same institution
-- domain. Each side is named by its connection and the source's own account id, never by the gateway
-- row id, which changes when an account vanishes at the source and comes back. `first` is the side of
-- the connection created first: its rows are the ones agents see when the pair is merged.
-- `automatic`: both sides report the same last 4 digits. `same` null: an open question for the operator.
-- A row the operator answered is never rewritten by a sync; one nobody answered follows the accounts.
CREATE TABLE finance_account_matches (
  id                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  first_connection_id  uuid NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  first_source_id      text NOT NULL,
  second_connection_id uuid NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
  second_source_id     text NOT NULL,
  institution_domain   text NOT NULL,
  automatic            boolean NOT NULL,
  same                 boolean,
  answered_at          timestamptz,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now(),
  UNIQUE (first_connection_id, first_source_id, second_connection_id, second_source_id),
  CHECK (first_connection_id <> second_connection_id),
  CHECK (NOT automatic OR (same AND answered_at IS NULL)),
  CHECK ((answered_at IS NULL) = (same IS NULL OR automatic))
);
CREATE INDEX finance_account_matches_second_idx ON finance_account_matches (second_connection_id, second_source_id) WHERE same;

-- The one home of "which cached accounts are merged away": the second side of a pair found or answered
-- the same, while the first side is cached (when it goes, the second one counts again). The query
-- engine hides these accounts and their transactions and holdings from every read.
CREATE VIEW finance_merged_accounts AS
  SELECT second.id, first.id AS merged_into
  FROM finance_account_matches m
  JOIN finance_accounts first ON first.connection_id = m.first_connection_id AND first.source_id = m.first_source_id
  JOIN finance_accounts second ON second.connection_id = m.second_connection_id AND second.source_id = m.second_source_id
  WHERE m.same;

-- Down Migration

DROP VIEW finance_merged_accounts;
DROP TABLE finance_account_matches;
