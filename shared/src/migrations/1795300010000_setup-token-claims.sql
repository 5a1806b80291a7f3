-- Up Migration

-- Setup tokens the sync-worker has claimed, or begun to claim, at a bank-link bridge (issue 16). A real
-- token works once; a second claim would be refused by the bridge and read as a possible compromise, so
-- the gateway records the token's SHA-256 before it sends the claim and never sends a claim twice.
CREATE TABLE setup_token_claims (
  token_hash bytea PRIMARY KEY CHECK (octet_length(token_hash) = 32),
  provider   text NOT NULL,
  claim_host text NOT NULL,
  claimed_at timestamptz NOT NULL DEFAULT now()
);

-- Down Migration

DROP TABLE setup_token_claims;
