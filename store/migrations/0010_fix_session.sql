-- An account's FIX session settings (broker/fix): SenderCompID, TargetCompID, their sub
-- ids and the logon user name. The password stays in the sealed credentials. Empty fields
-- fall back to the legacy server-field syntax and then to the node's FIX configuration.
ALTER TABLE trading_accounts ADD COLUMN fix_session jsonb NOT NULL DEFAULT '{}';

-- A change of the session settings is a change of connection details: the owner reconnects.
CREATE OR REPLACE FUNCTION trading_accounts_bump_config() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (NEW.login, NEW.server, NEW.credentials, NEW.fix_session) IS DISTINCT FROM (OLD.login, OLD.server, OLD.credentials, OLD.fix_session) THEN
        NEW.config_version := OLD.config_version + 1;
    END IF;
    RETURN NEW;
END $$;
DROP TRIGGER trading_accounts_bump_config ON trading_accounts;
CREATE TRIGGER trading_accounts_bump_config BEFORE UPDATE OF login, server, credentials, fix_session ON trading_accounts
    FOR EACH ROW EXECUTE FUNCTION trading_accounts_bump_config();
