-- A platform's FIX symbol list (broker/fix, a venue without SecurityList: the fix44
-- dialect): the list of every account of the platform (trading_accounts.platform) that has
-- none of its own (fix_session's "symbols"); an account of a platform without a row uses
-- the node's (?symbols=FILE). The node reads it with the account's configuration (store.
-- LoadFollowers) and hands it to the session it connects, so a change reaches an account
-- when its session is next made (a node claims the account).
-- The entries have the types of an account's list (0012): string "name"/"id", numbers for
-- the rest, "digits" an integer; anything else would fail every load of the platform's
-- accounts, so it is refused when written. The trading rules are the console's
-- (fix.CheckSymbols). An empty list is no row.
CREATE TABLE platform_fix_symbols (
    platform   text        PRIMARY KEY,
    symbols    jsonb       NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT platform_fix_symbols_list CHECK (
        jsonb_typeof(symbols) = 'array'
        AND NOT jsonb_path_exists(symbols, 'strict $[*] ? (@.type() != "object")')
        AND NOT jsonb_path_exists(symbols, 'strict $[*].keyvalue() ? ((@.key == "name" || @.key == "id") && @.value.type() != "string")')
        AND NOT jsonb_path_exists(symbols, 'strict $[*].keyvalue() ? (@.key != "name" && @.key != "id" && (@.value.type() != "number" || @.value.abs() > 1e300))')
        AND NOT jsonb_path_exists(symbols, 'strict $[*].digits ? (@.floor() != @ || @.abs() > 1000)')
    )
);
