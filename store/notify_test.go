package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

// listener runs ListenReleases until the test ends and hands its notifications and state
// changes to the test.
type listener struct {
	released chan store.Released
	up       chan bool
}

func listen(t *testing.T, db *storetest.DB) *listener {
	t.Helper()
	l := &listener{released: make(chan store.Released, 64), up: make(chan bool, 64)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	cfg := db.Pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = "copier-listen-test"
	go func() {
		defer close(done)
		store.ListenReleases(ctx, cfg, store.ListenOptions{
			OnRelease: func(r store.Released) { l.released <- r },
			OnState:   func(up bool) { l.up <- up },
			Retry:     10 * time.Millisecond,
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	l.awaitState(t, true)
	return l
}

func (l *listener) awaitState(t *testing.T, want bool) {
	t.Helper()
	select {
	case got := <-l.up:
		if got != want {
			t.Fatalf("listener state %v, want %v", got, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("listener never reported state %v", want)
	}
}

func (l *listener) await(t *testing.T, want store.Released) {
	t.Helper()
	select {
	case got := <-l.released:
		if got != want {
			t.Fatalf("notification %+v, want %+v", got, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no notification %+v", want)
	}
}

func (l *listener) none(t *testing.T) {
	t.Helper()
	select {
	case got := <-l.released:
		t.Fatalf("unexpected notification %+v", got)
	default:
	}
}

// TestReleasesNotifyInTheirTransaction: a clean release and a switched-off account's
// release each notify the platform with the releasing node; a renewal notifies nothing,
// nor does a release that matched no row.
func TestReleasesNotifyInTheirTransaction(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 4)
	l := listen(t, db)

	a := cycle(t, db.Pool, "node a", nil, 4)
	a = cycle(t, db.Pool, "node a", heldOf(a.Owned), 4) // a renewal: no notification
	if _, err := db.Pool.Exec(ctxT(t), `UPDATE trading_accounts SET enabled = false WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	a = cycle(t, db.Pool, "node a", heldOf(a.Owned), 4)
	if len(a.Released) != 1 {
		t.Fatalf("released %v, want [1]", a.Released)
	}
	l.await(t, store.Released{Platform: "mt5", Node: "node a"})
	if n, err := store.ReleaseAll(ctxT(t), db.Pool, "node a", heldOf(a.Owned)); err != nil || n != 3 {
		t.Fatalf("ReleaseAll = %d, %v", n, err)
	}
	l.await(t, store.Released{Platform: "mt5", Node: "node a"})
	if n, err := store.ReleaseAll(ctxT(t), db.Pool, "node a", heldOf(a.Owned)); err != nil || n != 0 {
		t.Fatalf("stale ReleaseAll = %d, %v", n, err)
	}
	// A marker notification proves that nothing was queued before it.
	if _, err := db.Pool.Exec(ctxT(t), `SELECT pg_notify($1, 'marker x')`, store.ReleaseChannel); err != nil {
		t.Fatal(err)
	}
	l.await(t, store.Released{Platform: "marker", Node: "x"})
	l.none(t)
}

// TestListenerReconnects: a listener whose connection is killed reports it, connects
// again and receives the next release.
func TestListenerReconnects(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 1)
	l := listen(t, db)
	if _, err := db.Pool.Exec(ctxT(t), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE application_name = 'copier-listen-test' AND datname = current_database()`); err != nil {
		t.Fatal(err)
	}
	l.awaitState(t, false)
	l.awaitState(t, true)
	a := cycle(t, db.Pool, "a", nil, 1)
	if _, err := store.ReleaseAll(ctxT(t), db.Pool, "a", heldOf(a.Owned)); err != nil {
		t.Fatal(err)
	}
	l.await(t, store.Released{Platform: "mt5", Node: "a"})
}

// TestNextForeignExpiry: a cycle with room to claim reports when the earliest lease of
// another node ends, by the database's clock; its own leases and a full node's do not count.
func TestNextForeignExpiry(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 4)
	a := cycle(t, db.Pool, "a", nil, 2)
	if a.NextForeignExpiry != 0 {
		t.Fatalf("no foreign lease, yet NextForeignExpiry = %v", a.NextForeignExpiry)
	}
	if _, err := db.Pool.Exec(ctxT(t), `UPDATE trading_accounts SET lease_until = now() + interval '30 seconds' WHERE node_id = 'a'`); err != nil {
		t.Fatal(err)
	}
	b := cycle(t, db.Pool, "b", nil, 4) // claims the two free ones, has room for two more
	if b.Claimed != 2 || b.NextForeignExpiry <= 25*time.Second || b.NextForeignExpiry > 30*time.Second {
		t.Fatalf("b claimed %d, NextForeignExpiry %v; want 2 and just under 30s", b.Claimed, b.NextForeignExpiry)
	}
	if full := cycle(t, db.Pool, "b", heldOf(b.Owned), 2); full.NextForeignExpiry != 0 {
		t.Fatalf("a full node scheduled a claim: %v", full.NextForeignExpiry)
	}
}

// TestReleaseIsFencedByTheEpoch: a release (shutdown, drain, hand-off) names (id, epoch)
// pairs: a process whose lease ran out and was claimed again under the same node id (a
// restart) cannot release the newer claim.
func TestReleaseIsFencedByTheEpoch(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 2)
	old := cycle(t, db.Pool, "a", nil, 2)
	expire(t, db.Pool, 1, 2)
	renewed := cycle(t, db.Pool, "a", nil, 2) // the same node id, a new process: new epochs
	if n, err := store.ReleaseAll(ctxT(t), db.Pool, "a", heldOf(old.Owned)); err != nil || n != 0 {
		t.Fatalf("release with the old epochs = %d, %v; want 0", n, err)
	}
	if res := cycle(t, db.Pool, "a", heldOf(renewed.Owned), 2); res.Renewed != 2 {
		t.Fatalf("the newer claim lost %d leases to a stale release", 2-res.Renewed)
	}
}

// TestHandOffIsFencedByTheEpoch: a hand-off names (id, epoch) pairs; a lease claimed again
// since (a new process under the same node id) is untouched, and no hand-off is counted.
func TestHandOffIsFencedByTheEpoch(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 2)
	old := cycle(t, db.Pool, "a", nil, 2)
	expire(t, db.Pool, 1, 2)
	renewed := cycle(t, db.Pool, "a", nil, 2) // the same node id, a new process: new epochs
	if n, err := store.HandOff(ctxT(t), db.Pool, "a", heldOf(old.Owned)); err != nil || n != 0 {
		t.Fatalf("hand-off with the old epochs = %d, %v; want 0", n, err)
	}
	if res := cycle(t, db.Pool, "a", heldOf(renewed.Owned), 2); res.Renewed != 2 {
		t.Fatalf("the newer claim lost %d leases to a stale hand-off", 2-res.Renewed)
	}
	if n, err := store.HandOff(ctxT(t), db.Pool, "a", heldOf(renewed.Owned[:1])); err != nil || n != 1 {
		t.Fatalf("hand-off at the held epoch = %d, %v; want 1", n, err)
	}
}
