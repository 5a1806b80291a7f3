-- Up Migration

-- One provider grant (design 7.1): its credentials sealed once (AES-256-GCM, associated data = this id),
-- the scopes the provider reported granting, and the provider's own account id, which a re-sign-in must
-- match so that two people's data never mix. Its connections (one per sector) point at it.
CREATE TABLE sign_ins (
  id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id            bigint NOT NULL REFERENCES users (id),
  provider           text NOT NULL,
  status             text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'needs_sign_in')),
  credentials        bytea NOT NULL,
  granted_scopes     text[] NOT NULL DEFAULT '{}',
  account_id         text,
  last_refreshed_at  timestamptz,
  last_error         text,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX sign_ins_account_idx ON sign_ins (user_id, provider, account_id) WHERE account_id IS NOT NULL;

-- The application credentials (client id and secret) the operator registered with an OAuth provider,
-- sealed with associated data 'provider-app:<provider>'; write-only in the Console.
CREATE TABLE provider_apps (
  user_id      bigint NOT NULL REFERENCES users (id),
  provider     text NOT NULL,
  credentials  bytea NOT NULL,
  updated_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (user_id, provider)
);

ALTER TABLE connections ADD COLUMN sign_in_id uuid REFERENCES sign_ins (id);

-- Every connection that held credentials becomes a sign-in of its own. The sign-in takes the
-- connection's id, the associated data its credentials were sealed with, so they open unchanged.
INSERT INTO sign_ins (id, user_id, provider, status, credentials, created_at, updated_at)
  SELECT id, user_id, provider, CASE WHEN status = 'needs_sign_in' THEN 'needs_sign_in' ELSE 'active' END, credentials, created_at, updated_at
  FROM connections WHERE credentials IS NOT NULL;
UPDATE connections SET sign_in_id = id WHERE credentials IS NOT NULL;
ALTER TABLE connections DROP COLUMN credentials;

-- One connection per sector a sign-in covers (spec 2.5).
CREATE UNIQUE INDEX connections_sign_in_sector_idx ON connections (sign_in_id, sector);

-- Down Migration

ALTER TABLE connections ADD COLUMN credentials bytea;
-- Only credentials sealed for the connection's own id open there again; the others need a new sign-in.
UPDATE connections c SET credentials = s.credentials FROM sign_ins s WHERE s.id = c.sign_in_id AND s.id = c.id;
DROP INDEX connections_sign_in_sector_idx;
ALTER TABLE connections DROP COLUMN sign_in_id;
DROP TABLE provider_apps;
DROP TABLE sign_ins;
