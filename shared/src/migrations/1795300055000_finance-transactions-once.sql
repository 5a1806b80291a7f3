-- Up Migration

-- Finance: each real transaction once (design 8.3, issue 33). Transactions of two matched accounts are
-- matched one to one; a transaction only one copy has stays visible. Every transaction gets a `date` and
-- one category language; accounts of sources that name no type get one inferred from their name.

-- "Normalized description" of design 8.3: lower-cased, digits and punctuation removed, whitespace collapsed.
CREATE FUNCTION finance_normal_description(description text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT btrim(regexp_replace(regexp_replace(lower(coalesce(description, '')), '[[:digit:][:punct:]]+', '', 'g'), '\s+', ' ', 'g')) $$;

-- The one category language (shared/src/finance/categories.ts lists the set for get_schema). The provider's own
-- category is kept in provider_category: the bank aggregator's personal_finance_category (detailed, else
-- primary), the bank-link bridge's merchant category code as `mcc:<code>`, or a word (the demo seed). Null
-- stays null (nothing known); a value this map does not know is `other`.
CREATE FUNCTION finance_category(provider_category text) RETURNS text
  LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
  AS $$
DECLARE
  code text := upper(btrim(provider_category));
  mcc integer;
BEGIN
  IF code IS NULL OR code = '' THEN RETURN NULL; END IF;
  IF code ~ '^MCC:\d{4}$' THEN
    mcc := substr(code, 5)::integer;
    RETURN CASE
      WHEN mcc IN (5411, 5422, 5441, 5451, 5462, 5499) THEN 'groceries'
      WHEN mcc BETWEEN 5811 AND 5814 THEN 'dining'
      WHEN mcc IN (4111, 4112, 4121, 4131, 4784, 5541, 5542, 5983, 7523, 7531, 7538) THEN 'transport'
      WHEN mcc BETWEEN 3000 AND 3999 OR mcc IN (4411, 4511, 4722, 7011, 7012) THEN 'travel'
      WHEN mcc IN (4814, 4816, 4899, 4900) THEN 'utilities'
      WHEN mcc IN (5912, 5975, 5976, 7230, 7297, 7298) OR mcc BETWEEN 8011 AND 8099 THEN 'health'
      WHEN mcc IN (5815, 5816, 5817, 5818, 7832, 7841) OR mcc BETWEEN 7911 AND 7999 THEN 'entertainment'
      WHEN mcc IN (6010, 6011, 6012, 4829, 6051, 6540) THEN 'transfer'
      WHEN mcc IN (6513, 1520, 1711, 1731, 1740, 1750, 1761, 1771, 5200, 5211, 5231, 5251, 5261, 5712, 5713, 5714, 5718, 5719) THEN 'housing'
      WHEN mcc IN (9211, 9222, 9223, 9311, 9399, 9402, 8398, 8661, 7210, 7211, 7216, 7217, 7221, 7251, 7261, 7273, 7276, 7277, 7278, 7299, 7311, 7321, 7333, 7338, 7339, 7342, 7349, 7361, 7372, 7375, 7379, 7392, 7393, 7394, 7395, 7399, 8111, 8211, 8220, 8241, 8244, 8249, 8299, 8351, 8911, 8931, 8999) THEN 'services'
      WHEN mcc BETWEEN 5000 AND 5999 THEN 'shopping'
      ELSE 'other'
    END;
  END IF;
  RETURN CASE
    -- Words: the set itself, and the demo's own words.
    WHEN code IN ('INCOME', 'TRANSFER', 'LOAN_PAYMENT', 'GROCERIES', 'DINING', 'SHOPPING', 'TRANSPORT', 'TRAVEL', 'HOUSING', 'UTILITIES', 'HEALTH', 'ENTERTAINMENT', 'SERVICES', 'FEES', 'OTHER') THEN lower(code)
    WHEN code = 'SUBSCRIPTIONS' THEN 'entertainment'
    -- The bank aggregator's personal_finance_category (detailed before primary; reference 1.5).
    WHEN code LIKE 'INCOME%' THEN 'income'
    WHEN code LIKE 'TRANSFER_IN%' OR code LIKE 'TRANSFER_OUT%' THEN 'transfer'
    WHEN code = 'LOAN_PAYMENTS_CREDIT_CARD_PAYMENT' THEN 'transfer'
    WHEN code LIKE 'LOAN_PAYMENTS%' THEN 'loan_payment'
    WHEN code LIKE 'BANK_FEES%' THEN 'fees'
    WHEN code LIKE 'ENTERTAINMENT%' THEN 'entertainment'
    WHEN code = 'FOOD_AND_DRINK_GROCERIES' THEN 'groceries'
    WHEN code LIKE 'FOOD_AND_DRINK%' THEN 'dining'
    WHEN code LIKE 'GENERAL_MERCHANDISE%' THEN 'shopping'
    WHEN code LIKE 'HOME_IMPROVEMENT%' THEN 'housing'
    WHEN code = 'RENT_AND_UTILITIES_RENT' THEN 'housing'
    WHEN code LIKE 'RENT_AND_UTILITIES%' THEN 'utilities'
    WHEN code LIKE 'MEDICAL%' OR code LIKE 'PERSONAL_CARE%' THEN 'health'
    WHEN code LIKE 'GENERAL_SERVICES%' OR code LIKE 'GOVERNMENT_AND_NON_PROFIT%' THEN 'services'
    WHEN code LIKE 'TRANSPORTATION%' THEN 'transport'
    WHEN code LIKE 'TRAVEL%' THEN 'travel'
    ELSE 'other'
  END;
END
$$;

-- Account type and subtype for sources that name none (the bank-link bridge), from the account's name; the
-- rule is documented in get_schema and kept in step with shared/src/finance/account-types.ts (a test
-- compares the two). An account holding positions is an investment account. Null when nothing says.
CREATE FUNCTION finance_inferred_account_kind(name text, has_holdings boolean) RETURNS text[]
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$
    SELECT CASE
      WHEN n ~ '(credit card|\mcard\M|\mvisa\M|mastercard|\mamex\M|american express)' THEN ARRAY['credit', 'credit card']
      WHEN n ~ 'mortgage' THEN ARRAY['loan', 'mortgage']
      WHEN n ~ 'student loan' THEN ARRAY['loan', 'student']
      WHEN n ~ '(auto|car) loan' THEN ARRAY['loan', 'auto']
      WHEN n ~ '(\mloan\M|line of credit|heloc)' THEN ARRAY['loan', NULL]
      WHEN n ~ '401 ?\(?k\)?' THEN ARRAY['investment', '401k']
      WHEN n ~ '(\mira\M|\mroth\M)' THEN ARRAY['investment', 'ira']
      WHEN n ~ '(brokerage|invest)' OR has_holdings THEN ARRAY['investment', 'brokerage']
      WHEN n ~ '(checking|chequing)' THEN ARRAY['depository', 'checking']
      WHEN n ~ 'money market' THEN ARRAY['depository', 'money market']
      WHEN n ~ '(savings|\msaver\M)' THEN ARRAY['depository', 'savings']
      ELSE ARRAY[NULL, NULL]
    END::text[]
    FROM (SELECT lower(coalesce(name, '')) AS n) AS named
  $$;

-- Transactions: the provider's category kept, `category` derived from it; `date` the posting date, else the
-- authorized (or pending) date. Both are generated, so no writer can let them disagree with their sources.
ALTER TABLE finance_transactions ADD COLUMN provider_category text;
UPDATE finance_transactions SET provider_category = category WHERE category IS NOT NULL;
ALTER TABLE finance_transactions DROP COLUMN category;
ALTER TABLE finance_transactions
  ADD COLUMN category text GENERATED ALWAYS AS (finance_category(provider_category)) STORED,
  ADD COLUMN date date GENERATED ALWAYS AS (coalesce(posted_on, authorized_on)) STORED,
  -- Set by finance_match_transactions(): the first copy's row this row is (a matched pair answered or found
  -- the same); every read leaves such a row out. When that row goes, this one counts again at once.
  ADD COLUMN merged_into text REFERENCES finance_transactions (id) ON DELETE SET NULL,
  -- Set on both rows of a transaction matched across an undecided pair; `_is_later` on the later connection's.
  ADD COLUMN possible_twin_id text REFERENCES finance_transactions (id) ON DELETE SET NULL,
  ADD COLUMN possible_twin_is_later boolean NOT NULL DEFAULT false;

CREATE INDEX finance_transactions_date_idx ON finance_transactions (date DESC NULLS LAST, id DESC);
CREATE INDEX finance_transactions_possible_twins_idx ON finance_transactions (possible_twin_id) WHERE possible_twin_id IS NOT NULL;
CREATE INDEX finance_transactions_merged_into_idx ON finance_transactions (merged_into) WHERE merged_into IS NOT NULL;

ALTER TABLE finance_accounts
  ADD COLUMN possible_twin_id text REFERENCES finance_accounts (id) ON DELETE SET NULL,
  ADD COLUMN possible_twin_is_later boolean NOT NULL DEFAULT false;

-- Accounts cached from the bank-link bridge before types were inferred. A debt at the bridge is a negative
-- balance (its amounts are positive when money enters the account, so a card purchase lowers the balance);
-- the catalogue's credit and loan balances are the amount owed, a positive number, so the sign turns.
UPDATE finance_accounts a
SET type = kind[1], subtype = kind[2],
    balance_current = CASE WHEN kind[1] IN ('credit', 'loan') THEN -a.balance_current ELSE a.balance_current END,
    balance_available = CASE WHEN kind[1] IN ('credit', 'loan') THEN NULL ELSE a.balance_available END
FROM (
  SELECT a2.id, finance_inferred_account_kind(a2.name, EXISTS (SELECT 1 FROM finance_holdings h WHERE h.account_id = a2.id)) AS kind
  FROM finance_accounts a2 JOIN connections c ON c.id = a2.connection_id
  WHERE c.provider = 'simplefin' AND a2.type IS NULL
) inferred
WHERE inferred.id = a.id AND inferred.kind[1] IS NOT NULL;

-- Transactions of every account pair that is the same or undecided, matched one to one (design 8.3): same
-- account, amount to the cent, currency, normalized description, dates at most three days apart. Within one
-- such group rows are taken in date order and each is paired with the oldest unpaired row of the other copy
-- still in reach (the greedy pairing that pairs the most); a pending row pairs with its posted self since its
-- date is the day it happened. The earlier connection's row counts: for a pair that is the same the later row
-- is merged into it; for an undecided pair both rows name each other as possible twins. Marks that no longer
-- hold are cleared. Run after each reconciliation of account pairs and after each answer.
CREATE FUNCTION finance_match_transactions() RETURNS integer
  LANGUAGE plpgsql
  AS $$
DECLARE
  r record;
  group_key text := NULL;
  waiting_ids text[];
  waiting_dates date[];
  waiting_side integer := 0;
  changed integer;
BEGIN
  CREATE TEMP TABLE IF NOT EXISTS finance_twin_marks (id text PRIMARY KEY, merged_into text, possible_twin_id text, is_later boolean) ON COMMIT DROP;
  TRUNCATE finance_twin_marks;
  FOR r IN
    SELECT m.id AS match_id, m.same, side.n AS side, t.id, t.date,
      round(t.amount, 2)::text || ' ' || coalesce(t.currency, '') || ' ' || finance_normal_description(t.description) AS key
    FROM finance_account_matches m
    JOIN finance_accounts fa ON fa.connection_id = m.first_connection_id AND fa.source_id = m.first_source_id
    JOIN finance_accounts sa ON sa.connection_id = m.second_connection_id AND sa.source_id = m.second_source_id
    CROSS JOIN LATERAL (VALUES (1, fa.id, fa.connection_id), (2, sa.id, sa.connection_id)) AS side(n, account_id, connection_id)
    JOIN finance_transactions t ON t.connection_id = side.connection_id AND t.account_id = side.account_id
    WHERE m.same IS DISTINCT FROM false AND t.date IS NOT NULL
    ORDER BY m.id, key, t.date, side.n, t.id
  LOOP
    IF group_key IS DISTINCT FROM r.match_id::text || '|' || r.key THEN
      group_key := r.match_id::text || '|' || r.key;
      waiting_ids := ARRAY[]::text[];
      waiting_dates := ARRAY[]::date[];
      waiting_side := 0;
    END IF;
    -- Rows waiting all belong to one side (a row of the other side would have paired with them).
    WHILE cardinality(waiting_ids) > 0 AND waiting_dates[1] < r.date - 3 LOOP
      waiting_ids := waiting_ids[2:];
      waiting_dates := waiting_dates[2:];
    END LOOP;
    IF cardinality(waiting_ids) > 0 AND waiting_side <> r.side THEN
      IF r.same THEN
        INSERT INTO finance_twin_marks VALUES (CASE WHEN r.side = 2 THEN r.id ELSE waiting_ids[1] END, CASE WHEN r.side = 2 THEN waiting_ids[1] ELSE r.id END, NULL, false);
      ELSE
        INSERT INTO finance_twin_marks VALUES (r.id, NULL, waiting_ids[1], r.side = 2), (waiting_ids[1], NULL, r.id, r.side = 1);
      END IF;
      waiting_ids := waiting_ids[2:];
      waiting_dates := waiting_dates[2:];
    ELSE
      waiting_ids := waiting_ids || r.id;
      waiting_dates := waiting_dates || r.date;
      waiting_side := r.side;
    END IF;
  END LOOP;

  UPDATE finance_transactions t
  SET merged_into = k.merged_into, possible_twin_id = k.possible_twin_id, possible_twin_is_later = coalesce(k.is_later, false)
  FROM (
    SELECT coalesce(k.id, t2.id) AS id, k.merged_into, k.possible_twin_id, k.is_later
    FROM finance_twin_marks k
    FULL JOIN (SELECT id FROM finance_transactions WHERE merged_into IS NOT NULL OR possible_twin_id IS NOT NULL) t2 ON t2.id = k.id
  ) k
  WHERE t.id = k.id
    AND (t.merged_into, t.possible_twin_id, t.possible_twin_is_later) IS DISTINCT FROM (k.merged_into, k.possible_twin_id, coalesce(k.is_later, false));
  GET DIAGNOSTICS changed = ROW_COUNT;

  -- Accounts of undecided pairs: both name each other (the first such pair when an account is in several).
  UPDATE finance_accounts a
  SET possible_twin_id = k.twin, possible_twin_is_later = coalesce(k.is_later, false)
  FROM (
    SELECT coalesce(k.id, a2.id) AS id, k.twin, k.is_later
    FROM (
      SELECT DISTINCT ON (id) id, twin, is_later FROM (
        SELECT fa.id, sa.id AS twin, false AS is_later, m.created_at, m.id AS match_id
        FROM finance_account_matches m
        JOIN finance_accounts fa ON fa.connection_id = m.first_connection_id AND fa.source_id = m.first_source_id
        JOIN finance_accounts sa ON sa.connection_id = m.second_connection_id AND sa.source_id = m.second_source_id
        WHERE m.same IS NULL
        UNION ALL
        SELECT sa.id, fa.id, true, m.created_at, m.id
        FROM finance_account_matches m
        JOIN finance_accounts fa ON fa.connection_id = m.first_connection_id AND fa.source_id = m.first_source_id
        JOIN finance_accounts sa ON sa.connection_id = m.second_connection_id AND sa.source_id = m.second_source_id
        WHERE m.same IS NULL
      ) sides ORDER BY id, created_at, match_id
    ) k
    FULL JOIN (SELECT id FROM finance_accounts WHERE possible_twin_id IS NOT NULL) a2 ON a2.id = k.id
  ) k
  WHERE a.id = k.id AND (a.possible_twin_id, a.possible_twin_is_later) IS DISTINCT FROM (k.twin, coalesce(k.is_later, false));
  RETURN changed;
END
$$;

SELECT finance_match_transactions();

-- Down Migration

DROP FUNCTION finance_match_transactions();
ALTER TABLE finance_accounts DROP COLUMN possible_twin_id, DROP COLUMN possible_twin_is_later;
DROP INDEX finance_transactions_merged_into_idx;
DROP INDEX finance_transactions_possible_twins_idx;
DROP INDEX finance_transactions_date_idx;
ALTER TABLE finance_transactions DROP COLUMN possible_twin_is_later, DROP COLUMN possible_twin_id, DROP COLUMN merged_into, DROP COLUMN date, DROP COLUMN category;
ALTER TABLE finance_transactions ADD COLUMN category text;
UPDATE finance_transactions SET category = provider_category;
ALTER TABLE finance_transactions DROP COLUMN provider_category;
DROP FUNCTION finance_inferred_account_kind(text, boolean);
DROP FUNCTION finance_category(text);
DROP FUNCTION finance_normal_description(text);
