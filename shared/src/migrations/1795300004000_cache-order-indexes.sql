-- Up Migration

-- Indexes matching the natural orders of the large cache objects (missing values last, id as the
-- tiebreak), so a sorted page stops after one page of index entries instead of sorting the table.
CREATE INDEX finance_transactions_posted_idx ON finance_transactions (posted_on DESC NULLS LAST, id DESC);
CREATE INDEX finance_transactions_account_idx ON finance_transactions (account_id);
CREATE INDEX health_samples_start_idx ON health_samples (start_at DESC NULLS LAST, id DESC);
CREATE INDEX mail_messages_received_idx ON mail_messages (received_at DESC NULLS LAST, id DESC);
CREATE INDEX calendar_events_start_idx ON calendar_events (start_at ASC NULLS LAST, id ASC);

-- Down Migration
DROP INDEX calendar_events_start_idx, mail_messages_received_idx, health_samples_start_idx,
  finance_transactions_account_idx, finance_transactions_posted_idx;
