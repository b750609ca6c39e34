-- An account's FIX session settings may hold its own symbol list ("symbols", for a venue
-- without SecurityList): an array of objects with string "name"/"id" and numeric
-- "contract_size", "digits" (an integer), "min_lot", "lot_step", "max_lot". Every other
-- value stays a string. Anything else would fail every load of the account: refuse it when
-- it is written. The trading rules (positive lots, …) are the console's (fix.CheckSymbols).
ALTER TABLE trading_accounts DROP CONSTRAINT trading_accounts_fix_session_object;
ALTER TABLE trading_accounts ADD CONSTRAINT trading_accounts_fix_session_object CHECK (
    jsonb_typeof(fix_session) = 'object'
    AND NOT jsonb_path_exists(fix_session, 'strict $.keyvalue() ? (@.key != "symbols" && @.value.type() != "string")')
    AND (NOT fix_session ? 'symbols' OR (
        jsonb_typeof(fix_session->'symbols') = 'array'
        AND NOT jsonb_path_exists(fix_session, 'strict $.symbols[*] ? (@.type() != "object")')
        AND NOT jsonb_path_exists(fix_session, 'strict $.symbols[*].keyvalue() ? ((@.key == "name" || @.key == "id") && @.value.type() != "string")')
        AND NOT jsonb_path_exists(fix_session, 'strict $.symbols[*].keyvalue() ? (@.key != "name" && @.key != "id" && (@.value.type() != "number" || @.value.abs() > 1e300))')
        AND NOT jsonb_path_exists(fix_session, 'strict $.symbols[*].digits ? (@.floor() != @ || @.abs() > 1000)')
    ))
);
