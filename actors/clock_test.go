package actors_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/sim"
	"github.com/snapcopier/copier/internal/testwait"
	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

// TestCopiesFromAServerWhoseClockIsBehind: the trade server's clock runs 90 s behind the
// node's, and links keep the default 60 s opening window. A master trade is copied on the
// event path; then an event is lost, and the reconcile of the gap copies the two trades
// since (each was opened moments ago by the server's clock). Then a second follower of the
// master is created: the node claims it, and its first reconcile, before any event has
// reached it, copies the three positions, dated by the offset the master's feed learnt.
// Before, every copy was 90 s old by the node's clock and skipped as too old.
func TestCopiesFromAServerWhoseClockIsBehind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.NewDB(t)
	behind := func() time.Time { return time.Now().Add(-90 * time.Second) }
	s := sim.New(sim.Config{Seed: 7, Clock: behind})
	provision(t, s, db, 1, "m1", store.RoleMaster)
	provision(t, s, db, 1001, "f1", store.RoleFollower)
	_, err := store.CreateLink(ctx, db.Pool, store.Link{MasterID: 1, FollowerID: 1001, Enabled: true, Magic: 7001, Settings: []byte(`{}`)})
	must(t, err)
	signals := &testwait.Log[actors.Signal]{}
	startOwn(t, db, s, signals, nil)
	awaitIdleReconcile(t, signals, 1001)
	buy := func() {
		t.Helper()
		_, err := s.MasterOpen(ctx, "m1", broker.MasterOpenRequest{Symbol: "EURUSD", Side: broker.Buy, Volume: 0.1, Magic: 1})
		must(t, err)
	}
	copies := func(login string, want int) {
		t.Helper()
		testwait.For(t, fmt.Sprintf("%d copies on %s", want, login), 30*time.Second, func() (bool, string) {
			ps, err := s.AccountPositions(ctx, login)
			if err != nil || len(ps) != want {
				return false, fmt.Sprintf("follower positions: %d (%v)", len(ps), err)
			}
			return true, ""
		})
	}
	buy()
	copies("f1", 1)

	mark := signals.Len()
	must(t, s.SetFaults(ctx, "m1", broker.Faults{DropEventRate: 1}))
	buy() // its event is lost
	s.ClearFaults("m1")
	buy() // the gap shows
	copies("f1", 3)
	reconciled := false
	for _, sig := range signals.Since(mark) {
		reconciled = reconciled || (sig.Kind == actors.SignalReconcileStarted && sig.Account == 1001 && sig.Cause == "gap")
	}
	if !reconciled {
		t.Fatal("no gap reconcile: the test proves nothing of the reconcile's plan")
	}

	provision(t, s, db, 1002, "f2", store.RoleFollower)
	_, err = store.CreateLink(ctx, db.Pool, store.Link{MasterID: 1, FollowerID: 1002, Enabled: true, Magic: 7001, Settings: []byte(`{}`)})
	must(t, err)
	copies("f2", 3)
}

// awaitIdleReconcile waits for account's first reconcile that left nothing to do.
func awaitIdleReconcile(t *testing.T, signals *testwait.Log[actors.Signal], account int64) {
	t.Helper()
	signals.Await(t, fmt.Sprintf("account %d reconciled", account), 0, 30*time.Second, func(sigs []actors.Signal) (bool, string) {
		for _, sig := range sigs {
			if sig.Kind == actors.SignalReconcileDone && sig.Account == account && sig.Idle {
				return true, ""
			}
		}
		return false, "no idle reconcile yet"
	})
}
