-- The positions of FIX accounts whose venue cannot be asked for them (the fix44 dialect):
-- the broker tracks them from its own fills, one row per position. Written through the
-- same fence as the other owner writes (node_id and lease_epoch of the account's owner), so
-- a node that lost the account cannot overwrite the new owner's book; read by whichever
-- node owns the account now.
CREATE TABLE fix_positions (
    account_id  bigint      NOT NULL REFERENCES trading_accounts (id) ON DELETE CASCADE,
    ticket      bigint      NOT NULL,
    node_id     text        NOT NULL,
    lease_epoch bigint      NOT NULL,
    position    jsonb       NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (account_id, ticket)
);
