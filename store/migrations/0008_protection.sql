-- The follower's own protections (package reconcile/protect): stop-out limits set by the
-- operator on the account. A link's live in its settings. A change is a change of the
-- follower's configuration: the owner reloads at its next cycle.
CREATE TABLE account_protection (
    account_id bigint PRIMARY KEY REFERENCES trading_accounts (id) ON DELETE CASCADE,
    limits     jsonb  NOT NULL DEFAULT '{}'
);

CREATE FUNCTION account_protection_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        UPDATE trading_accounts SET config_version = config_version + 1 WHERE id = OLD.account_id;
        RETURN OLD;
    END IF;
    IF TG_OP = 'INSERT' OR NEW.limits IS DISTINCT FROM OLD.limits THEN
        UPDATE trading_accounts SET config_version = config_version + 1 WHERE id = NEW.account_id;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER account_protection_bump AFTER INSERT OR UPDATE OR DELETE ON account_protection
    FOR EACH ROW EXECUTE FUNCTION account_protection_bump();

-- What a follower's protections remember between observations (high-water mark, trading
-- day, the stop-out in force), one row per scope: link_id 0 is the follower's own limits,
-- any other the link's. Written by the account's owner through the lease fence (node_id,
-- lease_epoch), so that a stop-out survives a takeover and a stale owner cannot undo it.
-- reset_gen counts operator resets: an owner's write based on an older generation is
-- refused, so a queued write cannot bring back a stop-out the operator just reset.
CREATE TABLE protection_state (
    follower_id bigint      NOT NULL REFERENCES trading_accounts (id) ON DELETE CASCADE,
    link_id     bigint      NOT NULL,
    state       jsonb       NOT NULL,
    reset_gen   bigint      NOT NULL DEFAULT 0,
    node_id     text,
    lease_epoch bigint,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (follower_id, link_id)
);
