-- trading_accounts.fix_session is read into the account's FIX session settings whenever the
-- account is loaded: a value that is not an object of strings (written by a tool or by
-- hand) would fail every load of the account on every node. Refuse it when it is written.
ALTER TABLE trading_accounts ADD CONSTRAINT trading_accounts_fix_session_object CHECK (
    jsonb_typeof(fix_session) = 'object'
    AND NOT jsonb_path_exists(fix_session, '$.* ? (@.type() != "string")')
);
