package store_test

import (
	"errors"
	"testing"

	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

// TestFencedProtectionWrites: a protection state lands only from the account's owner at
// its epoch; after a takeover the old owner's queued write is refused; an operator reset
// bumps the generation and the configuration, and a write based on the generation before
// it is refused, so a queued stop-out cannot come back after the reset.
func TestFencedProtectionWrites(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 2)
	a := cycle(t, db.Pool, "a", nil, 2)
	row := func(id, epoch, gen int64, doc string) store.ProtectionRow {
		return store.ProtectionRow{FollowerID: id, LinkID: 0, Epoch: epoch, State: []byte(doc), ResetGen: gen}
	}
	state := func(id int64) store.ProtectionRow {
		t.Helper()
		p, err := store.LoadProtection(ctxT(t), db.Pool, id)
		if err != nil {
			t.Fatal(err)
		}
		return p.States[0]
	}
	epoch1 := a.Owned[0].Epoch
	res, err := store.WriteProtectionFenced(ctxT(t), db.Pool, "a", []store.ProtectionRow{row(1, epoch1, 0, `{"high_water":100}`)})
	if err != nil || res.Applied != 1 {
		t.Fatalf("owner write: %+v, %v", res, err)
	}
	res, err = store.WriteProtectionFenced(ctxT(t), db.Pool, "b", []store.ProtectionRow{row(1, epoch1, 0, `{"high_water":1}`)})
	if err != nil || res.Applied != 0 || res.Refused != 1 {
		t.Fatalf("foreign node write: %+v, %v", res, err)
	}
	res, err = store.WriteProtectionFenced(ctxT(t), db.Pool, "a", []store.ProtectionRow{row(1, epoch1-1, 0, `{"high_water":1}`)})
	if err != nil || res.Applied != 0 || res.Refused != 1 {
		t.Fatalf("stale epoch write: %+v, %v", res, err)
	}

	// A stop-out, then an operator reset.
	stopped := `{"high_water":100,"stop":{"at":"2026-12-01T10:00:00Z","reason":"max_drawdown","equity":90,"loss":10}}`
	if _, err := store.WriteProtectionFenced(ctxT(t), db.Pool, "a", []store.ProtectionRow{row(1, epoch1, 0, stopped)}); err != nil {
		t.Fatal(err)
	}
	before, err := store.LoadFollowerConfig(ctxT(t), db.Pool, 1)
	if err != nil {
		t.Fatal(err)
	}
	refuse := errors.New("refused")
	if err := store.ResetProtection(ctxT(t), db.Pool, 1, 0, func([]byte, float64) ([]byte, error) { return nil, refuse }); !errors.Is(err, refuse) {
		t.Fatalf("a refused reset: %v", err)
	}
	if got := state(1); got.ResetGen != 0 {
		t.Fatalf("a refused reset changed the row: %+v", got)
	}
	if err := store.ResetProtection(ctxT(t), db.Pool, 1, 0, func([]byte, float64) ([]byte, error) { return []byte(`{"high_water":90}`), nil }); err != nil {
		t.Fatal(err)
	}
	after, err := store.LoadFollowerConfig(ctxT(t), db.Pool, 1)
	if err != nil {
		t.Fatal(err)
	}
	if after.ConfigVersion <= before.ConfigVersion {
		t.Fatalf("a reset must bump the configuration: %d → %d", before.ConfigVersion, after.ConfigVersion)
	}
	// The owner's write queued before it saw the reset (generation 0) must not land.
	res, err = store.WriteProtectionFenced(ctxT(t), db.Pool, "a", []store.ProtectionRow{row(1, epoch1, 0, stopped)})
	if err != nil || res.Applied != 0 || res.Refused != 1 {
		t.Fatalf("write from before the reset: %+v, %v", res, err)
	}
	if got := state(1); got.ResetGen != 1 || string(got.State) != `{"high_water": 90}` {
		t.Fatalf("after the reset: gen %d state %s", got.ResetGen, got.State)
	}
	res, err = store.WriteProtectionFenced(ctxT(t), db.Pool, "a", []store.ProtectionRow{row(1, epoch1, 1, `{"high_water":95}`)})
	if err != nil || res.Applied != 1 {
		t.Fatalf("write of the new generation: %+v, %v", res, err)
	}
	// Scopes without a state cannot be reset; unknown accounts are not found.
	if err := store.ResetProtection(ctxT(t), db.Pool, 2, 0, nil); !errors.Is(err, store.ErrNotStoppedOut) {
		t.Fatalf("reset without a state: %v", err)
	}
	if err := store.ResetProtection(ctxT(t), db.Pool, 99, 0, nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("reset of an unknown account: %v", err)
	}

	// After a takeover the old owner's queued write cannot land.
	expire(t, db.Pool, 1)
	b := cycle(t, db.Pool, "b", nil, 1)
	if len(b.Owned) != 1 || b.Owned[0].ID != 1 {
		t.Fatalf("b owns %+v", b.Owned)
	}
	res, err = store.WriteProtectionFenced(ctxT(t), db.Pool, "a", []store.ProtectionRow{row(1, epoch1, 1, stopped)})
	if err != nil || res.Applied != 0 || res.Refused != 1 {
		t.Fatalf("old owner's write after takeover: %+v, %v", res, err)
	}
	res, err = store.WriteProtectionFenced(ctxT(t), db.Pool, "b", []store.ProtectionRow{row(1, b.Owned[0].Epoch, 1, `{"high_water":96}`)})
	if err != nil || res.Applied != 1 {
		t.Fatalf("new owner's write: %+v, %v", res, err)
	}

	// The follower's own limits: set, bump, remove.
	if err := store.SetAccountProtection(ctxT(t), db.Pool, 2, []byte(`{"max_drawdown":{"percent":5}}`)); err != nil {
		t.Fatal(err)
	}
	p, err := store.LoadProtection(ctxT(t), db.Pool, 2)
	if err != nil || string(p.Limits) != `{"max_drawdown": {"percent": 5}}` {
		t.Fatalf("limits of 2: %s, %v", p.Limits, err)
	}
	if err := store.SetAccountProtection(ctxT(t), db.Pool, 2, nil); err != nil {
		t.Fatal(err)
	}
	if p, err := store.LoadProtection(ctxT(t), db.Pool, 2); err != nil || p.Limits != nil {
		t.Fatalf("limits of 2 after removal: %s, %v", p.Limits, err)
	}
	if err := store.SetAccountProtection(ctxT(t), db.Pool, 99, []byte(`{}`)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("limits of an unknown account: %v", err)
	}
}
