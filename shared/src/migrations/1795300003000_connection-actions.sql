-- Up Migration

-- The action catalogue a connection's source offers (design 4.3 list_actions), written by the sync-worker
-- after a sync, so that the gateway lists actions without asking the worker. Read-only providers keep '[]'.
ALTER TABLE connections ADD COLUMN actions jsonb NOT NULL DEFAULT '[]'::jsonb;

-- Down Migration
ALTER TABLE connections DROP COLUMN actions;
