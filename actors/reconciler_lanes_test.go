package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"testing"

	"github.com/snapcopier/copier/reconcile/follower"
)

// TestReconcilerLanes: periodic repairs wait behind every other reconcile and hold at
// most half the concurrency; an expedited or re-asked one moves to the front lane; a
// second request for a waiting account replaces the first without a second job.
func TestReconcilerLanes(t *testing.T) {
	r, ask, start, want := laneHarness(t, 4)
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

// TestReconcilerTurns: due periodic repairs get their turns only while nothing else waits
// and background work holds less than half the concurrency; a repair on its turn starts
// ahead of the background lane and counts as background work until it ends; a declined
// or unanswered turn frees its place.
func TestReconcilerTurns(t *testing.T) {
	r := newReconciler(reconcilerConfig{Concurrency: 4})().(*reconciler)
	t0 := time.Now()
	want := func(ids ...int64) {
		for _, id := range ids {
			r.want(repairWanted{accountID: id})
		}
	}
	want(1, 2, 3)
	r.enqueue(reconcileRequest{accountID: 9, ask: follower.Ask{Cause: follower.CauseGap}})
	r.grant(nil, t0)
	if len(r.granted) != 0 {
		t.Fatalf("turns %v given while a gap's reconcile waits", r.granted)
	}
	if req, _, _ := r.next(); req.accountID != 9 {
		t.Fatalf("started %d, want the gap's 9", req.accountID)
	}
	r.grant(nil, t0)
	if len(r.granted) != 2 || len(r.wants) != 1 {
		t.Fatalf("turns %v (wants %v), want two: half the concurrency", r.granted, r.wants)
	}
	// Account 1 takes its turn: front lane, counted as background work.
	r.enqueue(reconcileRequest{accountID: 1, ask: follower.Ask{Cause: follower.CausePeriodic}})
	r.enqueue(reconcileRequest{accountID: 5, ask: follower.Ask{Cause: follower.CausePeriodic}}) // no turn: background lane
	req, bg, ok := r.next()
	if !ok || req.accountID != 1 || !bg {
		t.Fatalf("started %d (background %v), want 1 on its turn, counted as background", req.accountID, bg)
	}
	r.runningBg++
	// Account 2 declines; account 3 gets the place once the turn is freed.
	delete(r.granted, 2)
	r.grant(nil, t0)
	if _, ok := r.granted[3]; !ok {
		t.Fatalf("turns %v, want 3's after 2 declined", r.granted)
	}
	// An unanswered turn is freed after grantTimeout.
	r.grant(nil, t0.Add(grantTimeout+time.Second))
	if len(r.granted) != 0 {
		t.Fatalf("turns %v kept past the timeout", r.granted)
	}
	// Repeated wants of one account are one, and the newest actor gets the turn.
	want(4)
	newer := &actor.PID{Id: "account-4-restarted"}
	r.want(repairWanted{accountID: 4, pid: newer})
	if len(r.wants) != 1 || r.wants[0].pid != newer {
		t.Fatalf("wants %v, want one, for the newest actor", r.wants)
	}
}

// laneHarness is a Reconciler of concurrency n without an actor around it: ask enqueues,
// start takes the next job as pump would, want checks the next job started.
func laneHarness(t *testing.T, n int) (r *reconciler, ask func(int64, follower.Cause), start func() (int64, bool), want func(int64, bool)) {
	r = newReconciler(reconcilerConfig{Concurrency: n})().(*reconciler)
	ask = func(id int64, cause follower.Cause) {
		r.enqueue(reconcileRequest{accountID: id, ask: follower.Ask{Cause: cause}})
	}
	start = func() (int64, bool) {
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
	want = func(id int64, bg bool) {
		t.Helper()
		got, gotBg := start()
		if got != id || gotBg != bg {
			t.Fatalf("started %d (background %v), want %d (background %v)", got, gotBg, id, bg)
		}
	}
	return r, ask, start, want
}

// TestReconcilerProtectionLane: a reconcile a stop-out waits for starts ahead of every
// other, whether asked for as such (CauseProtection) or prioritized while it waits; a
// later request of its account keeps its place, and a stale lane entry never runs twice.
func TestReconcilerProtectionLane(t *testing.T) {
	r, ask, start, want := laneHarness(t, 8)
	ask(1, follower.CauseGap)
	ask(2, follower.CauseAgain)
	ask(3, follower.CausePeriodic)
	ask(4, follower.CauseAgain)
	ask(5, follower.CauseProtection)
	if !r.prioritize(4) || r.prioritize(4) || r.prioritize(9) {
		t.Fatal("prioritize: want true once for a waiting request, false otherwise")
	}
	if !r.prioritize(3) {
		t.Fatal("prioritize: a waiting background request moves too")
	}
	ask(4, follower.CauseGap) // coalesces: 4 keeps its place in the protection lane
	if r.expedite(3) {
		t.Fatal("expedite moved a prioritized request out of the protection lane")
	}
	want(5, false)
	want(4, false)
	want(3, false)
	want(1, false)
	want(2, false)
	if id, _ := start(); id != 0 {
		t.Fatalf("started %d from an empty queue (a stale lane entry ran twice)", id)
	}
	// Nothing periodic gets a turn while a protection reconcile waits.
	r.running = 0
	ask(6, follower.CauseProtection)
	r.want(repairWanted{accountID: 7})
	r.grant(nil, time.Now())
	if len(r.granted) != 0 {
		t.Fatalf("turns %v given while a protection reconcile waits", r.granted)
	}
	want(6, false)
}
