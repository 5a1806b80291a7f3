-- Up Migration
-- The IANA zone a source is set to (the home hub's own setting), the default of the person's time zone when
-- the operator saved none. Written by a whole sync that read it; null for sources that have no zone.
ALTER TABLE connections ADD COLUMN source_time_zone text;

-- Down Migration
ALTER TABLE connections DROP COLUMN source_time_zone;
