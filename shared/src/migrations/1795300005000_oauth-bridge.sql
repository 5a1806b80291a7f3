-- Up Migration

-- The OAuth bridge (spec 2.4, 3.3, 4.3). Nothing here holds a usable secret: codes and tokens are kept as
-- their SHA-256, and a client registration is an application, never an agent, with no client secret.

CREATE TABLE oauth_clients (
  id            text PRIMARY KEY,
  user_id       bigint NOT NULL REFERENCES users (id),
  client_name   text,
  redirect_uris text[] NOT NULL CHECK (cardinality(redirect_uris) > 0),
  -- The other registered metadata (client_uri, logo_uri, …), echoed as registered; never null values.
  metadata      jsonb NOT NULL DEFAULT '{}',
  created_at    timestamptz NOT NULL DEFAULT now(),
  -- Set when the client first exchanges a code; registrations never used are reaped.
  last_used_at  timestamptz
);
CREATE INDEX oauth_clients_unused_idx ON oauth_clients (created_at) WHERE last_used_at IS NULL;

-- One sign-in: the refresh chain that grows from one authorization code. It is bound to the agent and to
-- the key hash it was signed in with, so deleting the agent removes it and a rotated key ends it.
CREATE TABLE oauth_chains (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  agent_id        bigint NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  agent_key_hash  bytea NOT NULL CHECK (octet_length(agent_key_hash) = 32),
  client_id       text NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
  resource        text NOT NULL,
  scope           text,
  created_at      timestamptz NOT NULL DEFAULT now(),
  revoked_at      timestamptz,
  revoke_reason   text
);
CREATE INDEX oauth_chains_agent_idx ON oauth_chains (agent_id);
CREATE INDEX oauth_chains_client_idx ON oauth_chains (client_id);

-- One-time authorization codes, bound to the client, the redirect URI, the PKCE challenge and the resource.
CREATE TABLE oauth_codes (
  code_hash       bytea PRIMARY KEY CHECK (octet_length(code_hash) = 32),
  client_id       text NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
  agent_id        bigint NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
  agent_key_hash  bytea NOT NULL CHECK (octet_length(agent_key_hash) = 32),
  redirect_uri    text NOT NULL,
  code_challenge  text NOT NULL,
  resource        text NOT NULL,
  scope           text,
  created_at      timestamptz NOT NULL DEFAULT now(),
  expires_at      timestamptz NOT NULL,
  used_at         timestamptz,
  -- The chain the code's exchange started; a second exchange of the code revokes it (RFC 6749 4.1.2).
  chain_id        uuid REFERENCES oauth_chains (id) ON DELETE SET NULL
);
CREATE INDEX oauth_codes_expires_idx ON oauth_codes (expires_at);

CREATE TABLE oauth_refresh_tokens (
  token_hash     bytea PRIMARY KEY CHECK (octet_length(token_hash) = 32),
  chain_id       uuid NOT NULL REFERENCES oauth_chains (id) ON DELETE CASCADE,
  created_at     timestamptz NOT NULL DEFAULT now(),
  expires_at     timestamptz NOT NULL,
  -- Set when the token was used; presenting it again revokes the chain (spec 3.3).
  rotated_at     timestamptz,
  -- During the optional replay grace only: the pair that replaced this token, sealed with a key derived
  -- from this token itself, so that only a holder of it can read the pair back.
  replay_sealed  bytea
);
CREATE INDEX oauth_refresh_tokens_chain_idx ON oauth_refresh_tokens (chain_id);
CREATE INDEX oauth_refresh_tokens_expires_idx ON oauth_refresh_tokens (expires_at);

CREATE TABLE oauth_access_tokens (
  token_hash  bytea PRIMARY KEY CHECK (octet_length(token_hash) = 32),
  chain_id    uuid NOT NULL REFERENCES oauth_chains (id) ON DELETE CASCADE,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL
);
CREATE INDEX oauth_access_tokens_chain_idx ON oauth_access_tokens (chain_id);
CREATE INDEX oauth_access_tokens_expires_idx ON oauth_access_tokens (expires_at);

-- Down Migration
DROP TABLE oauth_access_tokens, oauth_refresh_tokens, oauth_codes, oauth_chains, oauth_clients;
