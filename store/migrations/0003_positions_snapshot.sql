-- What each follower's owner last saw of its positions, with the time it saw them. Written
-- through the same fence as statuses (node_id and lease_epoch of the owner), at the status
-- writer's pace, so a console on any node can show positions of accounts other nodes own.
CREATE TABLE account_positions (
    account_id  bigint      PRIMARY KEY REFERENCES trading_accounts (id) ON DELETE CASCADE,
    node_id     text        NOT NULL,
    lease_epoch bigint      NOT NULL,
    positions   jsonb       NOT NULL,
    seen_at     timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);
