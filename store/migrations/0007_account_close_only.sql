-- The follower's own close-only mode (package reconcile/protect), beside each link's:
-- '' copies normally, 'let_close' copies nothing new, 'close_now' also closes the copies.
ALTER TABLE trading_accounts ADD COLUMN close_only text NOT NULL DEFAULT ''
    CHECK (close_only IN ('', 'let_close', 'close_now'));

-- A change of mode is a change of configuration: the owner reloads at its next cycle. Its
-- own trigger, so that migrations changing the connection trigger leave it alone.
CREATE FUNCTION trading_accounts_bump_close_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.close_only IS DISTINCT FROM OLD.close_only THEN
        NEW.config_version := OLD.config_version + 1;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER trading_accounts_bump_close_only BEFORE UPDATE OF close_only ON trading_accounts
    FOR EACH ROW EXECUTE FUNCTION trading_accounts_bump_close_only();
