-- Accounts, links and the ticket map (DESIGN §3). Column names are a public contract.

CREATE TABLE trading_accounts (
    id             bigint      PRIMARY KEY,
    platform       text        NOT NULL CHECK (platform <> ''),
    role           text        NOT NULL CHECK (role IN ('master', 'follower')),
    enabled        boolean     NOT NULL DEFAULT true,
    login          text        NOT NULL,
    server         text        NOT NULL DEFAULT '',
    credentials    bytea,                          -- sealed by the console; never logged
    node_id        text,                           -- owner now; NULL = free
    lease_until    timestamptz,                    -- by the database's clock
    lease_epoch    bigint      NOT NULL DEFAULT 0, -- fencing token: +1 on every claim
    config_version bigint      NOT NULL DEFAULT 1, -- +1 whenever the account or its links change
    status         text        NOT NULL DEFAULT 'unknown',
    last_error     text        NOT NULL DEFAULT '',
    balance        double precision,
    equity         double precision,
    status_at      timestamptz,
    last_copy_at   timestamptz,
    created_at     timestamptz NOT NULL DEFAULT now(),
    UNIQUE (platform, server, login)
) WITH (
    -- Room on each page so renewals (lease_until only, never indexed) stay HOT updates.
    fillfactor = 70,
    -- Lease rows are rewritten every cycle: vacuum them often so claims stay fast.
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_analyze_scale_factor = 0.05
);

-- Finding a node's rows (console, release). node_id changes only on claim and release.
CREATE INDEX trading_accounts_node_idx ON trading_accounts (node_id) WHERE node_id IS NOT NULL;
-- The claim scan: followers of one platform in id order. Deliberately no lease_until index.
CREATE INDEX trading_accounts_claim_idx ON trading_accounts (platform, id) WHERE role = 'follower' AND enabled;

CREATE TABLE copy_links (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    master_id   bigint      NOT NULL REFERENCES trading_accounts (id),
    follower_id bigint      NOT NULL REFERENCES trading_accounts (id),
    enabled     boolean     NOT NULL DEFAULT true,
    magic       bigint      NOT NULL CHECK (magic > 0),
    settings    jsonb       NOT NULL DEFAULT '{}',
    version     bigint      NOT NULL DEFAULT 1,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (master_id, follower_id),
    CHECK (master_id <> follower_id)
);
CREATE INDEX copy_links_follower_idx ON copy_links (follower_id);
CREATE INDEX copy_links_master_idx ON copy_links (master_id);

-- The ticket map: which follower position copies which master position through which link
-- (one row per link and master position; re-pointed when the copy changes).
CREATE TABLE copy_positions (
    follower_id     bigint           NOT NULL REFERENCES trading_accounts (id),
    link_id         bigint           NOT NULL REFERENCES copy_links (id) ON DELETE CASCADE,
    master_ticket   bigint           NOT NULL,
    follower_ticket bigint           NOT NULL,
    volume          double precision NOT NULL, -- copy ratio: follower lots per master lot
    opened_at       timestamptz      NOT NULL DEFAULT now(),
    closed_at       timestamptz,
    lease_epoch     bigint           NOT NULL, -- epoch of the writer
    updated_at      timestamptz      NOT NULL DEFAULT now(),
    PRIMARY KEY (follower_id, link_id, master_ticket)
);
CREATE INDEX copy_positions_open_idx ON copy_positions (follower_id) WHERE closed_at IS NULL;

-- A change to a link changes its follower's configuration: bump the follower's version so
-- the owning node notices in its next lease cycle.
CREATE FUNCTION copy_links_bump_follower() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        UPDATE trading_accounts SET config_version = config_version + 1 WHERE id = OLD.follower_id;
        RETURN OLD;
    END IF;
    UPDATE trading_accounts SET config_version = config_version + 1 WHERE id = NEW.follower_id;
    IF TG_OP = 'UPDATE' AND OLD.follower_id <> NEW.follower_id THEN
        UPDATE trading_accounts SET config_version = config_version + 1 WHERE id = OLD.follower_id;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER copy_links_bump_follower AFTER INSERT OR UPDATE OR DELETE ON copy_links
    FOR EACH ROW EXECUTE FUNCTION copy_links_bump_follower();

-- Connection details of an account changed: its node must reconnect. Column-specific, so
-- lease renewals and status writes never fire it.
CREATE FUNCTION trading_accounts_bump_config() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF (NEW.login, NEW.server, NEW.credentials) IS DISTINCT FROM (OLD.login, OLD.server, OLD.credentials) THEN
        NEW.config_version := OLD.config_version + 1;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER trading_accounts_bump_config BEFORE UPDATE OF login, server, credentials ON trading_accounts
    FOR EACH ROW EXECUTE FUNCTION trading_accounts_bump_config();
