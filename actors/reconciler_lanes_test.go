package actors

import (
	"testing"

	"github.com/snapcopier/copier/reconcile/follower"
)

// TestReconcilerLanes: periodic repairs wait behind every other reconcile and hold at
// most half the concurrency; an expedited or re-asked one moves to the front lane; a
// second request for a waiting account replaces the first without a second job.
func TestReconcilerLanes(t *testing.T) {
	r := newReconciler(reconcilerConfig{Concurrency: 4})().(*reconciler)
	ask := func(id int64, cause follower.Cause) {
		r.enqueue(reconcileRequest{accountID: id, ask: follower.Ask{Cause: cause}})
	}
	start := func() (int64, bool) {
		req, bg, ok := r.next()
		if !ok {
			return 0, false
		}
		r.running++
		if bg {
			r.runningBg++
		}
		return req.accountID, bg
	}
	want := func(id int64, bg bool) {
		t.Helper()
		got, gotBg := start()
		if got != id || gotBg != bg {
			t.Fatalf("started %d (background %v), want %d (background %v)", got, gotBg, id, bg)
		}
	}
	ask(1, follower.CausePeriodic)
	ask(2, follower.CausePeriodic)
	ask(3, follower.CausePeriodic)
	ask(4, follower.CausePeriodic)
	ask(5, follower.CauseGap)
	ask(6, follower.CausePeriodic)
	want(5, false) // the front lane first, though asked last
	want(1, true)
	want(2, true)
	if id, _ := start(); id != 0 {
		t.Fatalf("started %d: background jobs took more than half the concurrency", id)
	}
	// Account 3 is expedited (an event waits for it): it starts though the background
	// lane is full.
	if !r.expedite(3) || r.expedite(3) || r.expedite(5) {
		t.Fatal("expedite: want true once for a waiting background request, false otherwise")
	}
	want(3, false)
	// A front-lane request for a waiting background account replaces it and moves it.
	ask(4, follower.CauseAgain)
	if len(r.pending) != 2 || r.coalesced != 1 {
		t.Fatalf("pending %v, coalesced %d", r.pending, r.coalesced)
	}
	r.running, r.runningBg = 0, 0
	want(4, false)
	want(6, true)
	if id, _ := start(); id != 0 {
		t.Fatalf("started %d from an empty queue (a stale lane entry ran twice)", id)
	}
}
