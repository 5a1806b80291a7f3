-- Up Migration

-- Whether the person starred or flagged a message (Gmail's STARRED label, issue 17); null where a source
-- does not say.
ALTER TABLE mail_messages ADD COLUMN is_starred boolean;

-- Down Migration

ALTER TABLE mail_messages DROP COLUMN is_starred;
