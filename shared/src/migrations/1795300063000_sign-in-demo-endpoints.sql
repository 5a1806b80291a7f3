-- Up Migration

-- Issue 42: a demo sign-in holds the loopback stand-in origins its provider's addresses map onto. Written
-- only when the sign-in is made (INSERT); the trigger refuses any later change, so the mark can never be
-- added to an operator's sign-in, nor taken off or moved on a demo one.
ALTER TABLE sign_ins ADD COLUMN demo_endpoints jsonb;

CREATE FUNCTION sign_ins_demo_endpoints_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.demo_endpoints IS DISTINCT FROM OLD.demo_endpoints THEN
    RAISE EXCEPTION 'a sign-in''s demo stand-ins are set when it is made and never changed' USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;

CREATE TRIGGER sign_ins_demo_endpoints_fixed BEFORE UPDATE OF demo_endpoints ON sign_ins
  FOR EACH ROW EXECUTE FUNCTION sign_ins_demo_endpoints_fixed();

-- Down Migration
DROP TRIGGER sign_ins_demo_endpoints_fixed ON sign_ins;
DROP FUNCTION sign_ins_demo_endpoints_fixed();
ALTER TABLE sign_ins DROP COLUMN demo_endpoints;
