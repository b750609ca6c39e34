package stress

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The audit is the run's own witness inside the database: triggers in a schema of their
// own (stress_audit) that record every change of a follower's lease epoch and every write
// that a node made for an account it did not own at that epoch. They only record; they
// never change or refuse a write, so the engine runs exactly as it would without them.
// Their queries keep one generic plan each (a lookup by key), whatever the writer's session
// says: planned afresh for every row, as a session forcing custom plans would have them, the
// status trigger alone took a fifth of PostgreSQL's CPU in a 20,000-follower run, inside
// the statements whose time the run measures.
//
//   - copy_positions: a row written (inserted or updated) with a lease_epoch that is not
//     the follower's current epoch, or while no node owns the follower, is a stale write.
//     The engine's upsert share-locks the follower row, so the trigger sees the ownership
//     the write was checked against.
//   - trading_accounts status: a status whose status_at (the writer's clock when it made
//     the status) is older than the claim of the current epoch was made by an earlier
//     owner: a stale write. So is a status written while no node owns the account.
const auditSQL = `
CREATE SCHEMA IF NOT EXISTS stress_audit;
CREATE TABLE IF NOT EXISTS stress_audit.epochs (
    account_id bigint      NOT NULL,
    old_epoch  bigint,
    new_epoch  bigint      NOT NULL,
    old_node   text,
    new_node   text,
    at         timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX IF NOT EXISTS epochs_account_idx ON stress_audit.epochs (account_id, new_epoch);
CREATE TABLE IF NOT EXISTS stress_audit.stale_writes (
    tbl           text        NOT NULL,
    account_id    bigint      NOT NULL,
    written_epoch bigint,
    current_epoch bigint,
    current_node  text,
    detail        text,
    at            timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE OR REPLACE FUNCTION stress_audit.on_epoch() RETURNS trigger LANGUAGE plpgsql
    SET plan_cache_mode = force_generic_plan AS $$
BEGIN
    INSERT INTO stress_audit.epochs (account_id, old_epoch, new_epoch, old_node, new_node)
    VALUES (NEW.id, OLD.lease_epoch, NEW.lease_epoch, OLD.node_id, NEW.node_id);
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS stress_audit_epoch ON public.trading_accounts;
CREATE TRIGGER stress_audit_epoch AFTER UPDATE OF lease_epoch ON public.trading_accounts
    FOR EACH ROW WHEN (NEW.lease_epoch IS DISTINCT FROM OLD.lease_epoch)
    EXECUTE FUNCTION stress_audit.on_epoch();

CREATE OR REPLACE FUNCTION stress_audit.on_status() RETURNS trigger LANGUAGE plpgsql
    SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    claimed timestamptz;
BEGIN
    IF OLD.node_id IS NULL THEN
        INSERT INTO stress_audit.stale_writes (tbl, account_id, current_epoch, detail)
        VALUES ('trading_accounts', NEW.id, OLD.lease_epoch, 'status written while no node owned the account');
        RETURN NEW;
    END IF;
    SELECT max(e.at) INTO claimed FROM stress_audit.epochs e
    WHERE e.account_id = NEW.id AND e.new_epoch = OLD.lease_epoch;
    IF claimed IS NOT NULL AND NEW.status_at IS NOT NULL AND NEW.status_at < claimed - interval '1 millisecond' THEN
        INSERT INTO stress_audit.stale_writes (tbl, account_id, current_epoch, current_node, detail)
        VALUES ('trading_accounts', NEW.id, OLD.lease_epoch, OLD.node_id,
                format('status made at %s, before epoch %s was claimed at %s', NEW.status_at, OLD.lease_epoch, claimed));
    END IF;
    RETURN NEW;
END $$;
DROP TRIGGER IF EXISTS stress_audit_status ON public.trading_accounts;
CREATE TRIGGER stress_audit_status BEFORE UPDATE OF status_at ON public.trading_accounts
    FOR EACH ROW WHEN (NEW.status_at IS DISTINCT FROM OLD.status_at)
    EXECUTE FUNCTION stress_audit.on_status();

CREATE OR REPLACE FUNCTION stress_audit.on_ticket() RETURNS trigger LANGUAGE plpgsql
    SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    cur_epoch bigint;
    cur_node  text;
BEGIN
    SELECT t.lease_epoch, t.node_id INTO cur_epoch, cur_node FROM public.trading_accounts t WHERE t.id = NEW.follower_id;
    IF cur_node IS NULL OR cur_epoch IS DISTINCT FROM NEW.lease_epoch THEN
        INSERT INTO stress_audit.stale_writes (tbl, account_id, written_epoch, current_epoch, current_node, detail)
        VALUES ('copy_positions', NEW.follower_id, NEW.lease_epoch, cur_epoch, cur_node,
                format('%s link %s master ticket %s follower ticket %s', TG_OP, NEW.link_id, NEW.master_ticket, NEW.follower_ticket));
    END IF;
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS stress_audit_ticket ON public.copy_positions;
CREATE TRIGGER stress_audit_ticket AFTER INSERT OR UPDATE ON public.copy_positions
    FOR EACH ROW EXECUTE FUNCTION stress_audit.on_ticket();
`

// installAudit creates the audit schema and triggers.
func installAudit(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := pool.Exec(ctx, auditSQL)
	return err
}

// auditResult is what the audit recorded.
type auditResult struct {
	StaleWrites     int      `json:"stale_writes_applied"`
	FutureEpochRows int      `json:"future_epoch_rows"`
	EpochChanges    int      `json:"epoch_changes"`
	Examples        []string `json:"examples,omitempty"`
}

// readAudit reads the audit tables, and counts ticket-map rows whose writer's epoch is
// above the follower's current epoch (which no correct writer can produce).
func readAudit(ctx context.Context, pool *pgxpool.Pool) (auditResult, error) {
	var a auditResult
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM stress_audit.stale_writes`).Scan(&a.StaleWrites); err != nil {
		return a, err
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM stress_audit.epochs`).Scan(&a.EpochChanges); err != nil {
		return a, err
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM copy_positions c JOIN trading_accounts t ON t.id = c.follower_id
		WHERE c.lease_epoch > t.lease_epoch`).Scan(&a.FutureEpochRows); err != nil {
		return a, err
	}
	rows, err := pool.Query(ctx, `SELECT tbl, account_id, coalesce(written_epoch, -1), coalesce(current_epoch, -1),
		coalesce(current_node, ''), coalesce(detail, ''), at FROM stress_audit.stale_writes ORDER BY at LIMIT 20`)
	if err != nil {
		return a, err
	}
	defer rows.Close()
	for rows.Next() {
		var tbl, node, detail string
		var id, written, current int64
		var at any
		if err := rows.Scan(&tbl, &id, &written, &current, &node, &detail, &at); err != nil {
			return a, err
		}
		a.Examples = append(a.Examples, fmt.Sprintf("%s account %d: written epoch %d, current epoch %d (%s): %s at %v", tbl, id, written, current, node, detail, at))
	}
	return a, rows.Err()
}

// readClaims reads every claim of a follower from the audit: each change of lease_epoch
// is a claim (a release keeps the epoch), at the time the claiming statement ran (a
// moment before its commit, so an order executed between the two counts as late too).
func readClaims(ctx context.Context, pool *pgxpool.Pool) ([]Claim, error) {
	rows, err := pool.Query(ctx, `SELECT t.login, coalesce(e.new_node, ''), e.new_epoch, e.at
		FROM stress_audit.epochs e JOIN trading_accounts t ON t.id = e.account_id ORDER BY e.at`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Claim, error) {
		var c Claim
		err := row.Scan(&c.Follower, &c.Node, &c.Epoch, &c.At)
		return c, err
	})
}
