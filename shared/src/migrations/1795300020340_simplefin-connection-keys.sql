-- Up Migration
-- Bank-link bridge (SimpleFIN) account ids are unique only within one bridge connection (one login at one bank;
-- protocol v2, "Account"), so accounts are keyed `<scope>/<id>` now, both parts percent-encoded as JavaScript's
-- encodeURIComponent does, and their transactions and holdings `<account key>:<id>`
-- (services/sync-worker/src/connectors/simplefin/simplefin-keys.ts). Rows cached before were keyed by the bare
-- account id (`<id>`, children `<encoded id>:<id>`), from answers that named no connection; they get the scope `%`,
-- which no percent-encoded text can be: the connector gives each such row to the one answered account with that id
-- and keeps it there, so the row's gateway id, its transactions and an answered account match stay with it. The
-- account-match rows naming such an account are re-keyed with it. Rows already in the new shape are left alone, so a
-- second run changes nothing.
CREATE FUNCTION simplefin_uri_component(value text) RETURNS text
  LANGUAGE sql IMMUTABLE STRICT
  AS $$
    SELECT coalesce(string_agg(
      CASE WHEN ch ~ '^[A-Za-z0-9_.!~*''()-]$' THEN ch
           ELSE upper(regexp_replace(encode(convert_to(ch, 'UTF8'), 'hex'), '(..)', '%\1', 'g')) END,
      '' ORDER BY n), '')
    FROM regexp_split_to_table(value, '') WITH ORDINALITY AS part(ch, n)
  $$;

UPDATE finance_transactions t
SET source_id = '%/' || t.source_id
FROM connections c
WHERE c.id = t.connection_id AND c.provider = 'simplefin' AND t.source_id !~ '^[^:/]*/[^:/]+:';

UPDATE finance_holdings h
SET source_id = '%/' || h.source_id
FROM connections c
WHERE c.id = h.connection_id AND c.provider = 'simplefin' AND h.source_id !~ '^[^:/]*/[^:/]+:';

UPDATE finance_account_matches m
SET first_source_id = '%/' || simplefin_uri_component(m.first_source_id)
FROM connections c
WHERE c.id = m.first_connection_id AND c.provider = 'simplefin' AND m.first_source_id !~ '^[^:/]*/[^:/]+$';

UPDATE finance_account_matches m
SET second_source_id = '%/' || simplefin_uri_component(m.second_source_id)
FROM connections c
WHERE c.id = m.second_connection_id AND c.provider = 'simplefin' AND m.second_source_id !~ '^[^:/]*/[^:/]+$';

UPDATE finance_accounts a
SET source_id = '%/' || simplefin_uri_component(a.source_id)
FROM connections c
WHERE c.id = a.connection_id AND c.provider = 'simplefin' AND a.source_id !~ '^[^:/]*/[^:/]+$';

DROP FUNCTION simplefin_uri_component(text);

-- Down Migration
-- Nothing to undo: rows the connector has keyed by their bridge connection since cannot take a bare id again
-- without colliding, and the old code would read the `%/` keys as accounts of their own.
