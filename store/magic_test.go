package store_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

// plantMagicClash undoes migration 2 and writes two links into follower 1 with magic 7,
// as a database from before the constraint could hold.
func plantMagicClash(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	seedAccounts(t, pool, "mt5", "follower", 1, 1)
	seedAccounts(t, pool, "mt5", "master", 100, 2)
	for _, q := range []string{
		`ALTER TABLE copy_links DROP CONSTRAINT ` + store.LinkMagicConstraint,
		`DELETE FROM schema_migrations WHERE version = 2`,
		`INSERT INTO copy_links (master_id, follower_id, magic) VALUES (100, 1, 7), (101, 1, 7)`,
	} {
		if _, err := pool.Exec(ctxT(t), q); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMigrationRefusesAnExistingMagicClash(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	plantMagicClash(t, db.Pool)
	_, err := store.Migrate(ctxT(t), db.Pool)
	if !errors.Is(err, store.ErrMagicClash) || !strings.Contains(err.Error(), "follower 1: magic 7 on links") {
		t.Fatalf("migrate with a clash: %v", err)
	}
	if _, err := db.Pool.Exec(ctxT(t), `UPDATE copy_links SET magic = 8 WHERE master_id = 101`); err != nil {
		t.Fatal(err)
	}
	if applied, err := store.Migrate(ctxT(t), db.Pool); err != nil || len(applied) != 1 || applied[0] != 2 {
		t.Fatalf("migrate after the fix: %v, %v", applied, err)
	}
}

func TestLinkMagicIsUniquePerFollower(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 2)
	seedAccounts(t, db.Pool, "mt5", "master", 100, 2)
	ctx := ctxT(t)
	if _, err := store.CreateLink(ctx, db.Pool, store.Link{MasterID: 100, FollowerID: 1, Magic: 7}); err != nil {
		t.Fatal(err)
	}
	// Another follower may use the same magic.
	if _, err := store.CreateLink(ctx, db.Pool, store.Link{MasterID: 100, FollowerID: 2, Magic: 7}); err != nil {
		t.Fatal(err)
	}
	_, err := store.CreateLink(ctx, db.Pool, store.Link{MasterID: 101, FollowerID: 1, Magic: 7})
	if c, ok := store.UniqueViolation(err); !errors.Is(err, store.ErrMagicClash) || !ok || c != store.LinkMagicConstraint {
		t.Fatalf("a second link into follower 1 with magic 7: %v", err)
	}
	id, err := store.CreateLink(ctx, db.Pool, store.Link{MasterID: 101, FollowerID: 1, Magic: 8})
	if err != nil {
		t.Fatal(err)
	}
	err = store.UpdateLink(ctx, db.Pool, store.Link{ID: id, Enabled: true, Magic: 7, Settings: []byte("{}")})
	if !errors.Is(err, store.ErrMagicClash) {
		t.Fatalf("an edit to a clashing magic: %v", err)
	}
}
