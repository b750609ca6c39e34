package leasekeeper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/internal/testwait"
	"github.com/snapcopier/copier/store"
)

// The LeaseKeeper's rules (docs/design.md §1–2) checked on the actor itself, with an injected clock
// and a fake cycle the test answers: nothing here waits on real time.

var keeperTiming = Config{Lease: 60 * time.Second, Fence: 15 * time.Second, Interval: time.Hour}

// cycleCall is one cycle the keeper ran; the test answers it.
type cycleCall struct {
	ctx   context.Context
	req   store.CycleRequest
	reply chan cycleAnswer
}

// cycleAnswer is how the fake cycle ends: after advance of the fake clock (time spent in
// the query), with res or err.
type cycleAnswer struct {
	advance time.Duration
	res     store.CycleResult
	err     error
}

type keeperHarness struct {
	t        *testing.T
	clk      *fakeClock
	sys      *actor.ActorSystem
	keeper   *actor.PID
	calls    chan cycleCall
	owned    testwait.Log[Owned]
	reports  testwait.Log[CycleReport]
	releases testwait.Log[[]store.Held]
	handoffs testwait.Log[[]store.Held] // hand-off releases, as the store was asked
	handed   testwait.Log[int]          // hand-offs the keeper finished (OnHandOff)
	stopSome testwait.Log[[]int64]
	steps    testwait.Log[string] // "stop", "flush", "release": a hand-off's steps in order
	nodeGate *Gate
	sup      *actor.PID

	mu          sync.Mutex
	stopAnswers bool            // the fake supervisor answers StopAccounts
	stopped     AccountsStopped // ... with this
	openAtStop  []string        // gates open when StopAccounts arrived
	someFails   bool            // the fake supervisor never answers StopSome
	someHeld    map[int64]time.Time
	flushErr    error // the fake StatusWriter's answer to Flush
}

func newKeeperHarness(t *testing.T, answerStop bool) *keeperHarness {
	t.Helper()
	return newKeeperHarnessWith(t, answerStop, nil)
}

// newKeeperHarnessWith is newKeeperHarness with the keeper's configuration adjusted by
// tweak (when not nil).
func newKeeperHarnessWith(t *testing.T, answerStop bool, tweak func(*KeeperConfig)) *keeperHarness {
	t.Helper()
	quiet := actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) })
	h := &keeperHarness{t: t, clk: newFakeClock(), sys: actor.NewActorSystem(quiet), calls: make(chan cycleCall), stopAnswers: answerStop}
	h.nodeGate = NewGate(h.clk)
	sup := h.sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		switch m := ctx.Message().(type) {
		case ping:
			ctx.Respond(m)
		case Owned:
			h.owned.Add(m)
		case StopSome:
			h.steps.Add("stop")
			h.stopSome.Add(m.IDs)
			h.mu.Lock()
			fails, held := h.someFails, h.someHeld
			h.mu.Unlock()
			if !fails {
				ctx.Respond(SomeStopped{HeldBack: held})
			}
		case StopAccounts:
			h.steps.Add("stop")
			var open []string
			if h.nodeGate.HoldsLease() {
				open = append(open, "node")
			}
			for _, o := range h.owned.Since(0) {
				for id, a := range o.Accounts {
					if a.Gate.HoldsLease() {
						open = append(open, fmt.Sprint(id))
					}
				}
			}
			h.mu.Lock()
			ok, stopped := h.stopAnswers, h.stopped
			h.openAtStop = open
			h.mu.Unlock()
			if ok {
				ctx.Respond(stopped)
			}
		}
	}))
	flusher := h.sys.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(Flush); ok && answerStop {
			h.steps.Add("flush")
			h.mu.Lock()
			err := h.flushErr
			h.mu.Unlock()
			ctx.Respond(Flushed{Err: err})
		}
	}))
	h.sup = sup
	cfg := KeeperConfig{
		Node: "n", Platform: "sim", Capacity: 10, Timing: keeperTiming, Clock: h.clk,
		NodeGate: h.nodeGate, Supervisor: sup, Flusher: flusher, Logger: zerolog.Nop(),
		OnCycle: h.reports.Add,
		Cycle: func(ctx context.Context, req store.CycleRequest) (store.CycleResult, error) {
			reply := make(chan cycleAnswer, 1)
			select {
			case h.calls <- cycleCall{ctx: ctx, req: req, reply: reply}:
			case <-ctx.Done():
				return store.CycleResult{}, ctx.Err()
			}
			// Once the query is under way the test decides how it ends, even after its
			// context ended: a commit can race a cancel.
			var a cycleAnswer
			select {
			case a = <-reply:
			case <-time.After(30 * time.Second):
				return store.CycleResult{}, ctx.Err()
			}
			h.clk.Advance(a.advance)
			return a.res, a.err
		},
		Release: func(_ context.Context, _ string, held []store.Held) (int64, error) {
			h.steps.Add("release")
			h.releases.Add(held)
			return int64(len(held)), nil
		},
		HandOff: func(_ context.Context, _ string, held []store.Held) (int64, error) {
			h.steps.Add("release")
			h.handoffs.Add(held)
			return int64(len(held)), nil
		},
		OnHandOff: h.handed.Add,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	h.keeper = h.sys.Root.Spawn(actor.PropsFromProducer(NewKeeper(cfg)))
	t.Cleanup(func() {
		_ = h.sys.Root.StopFuture(h.keeper).Wait()
		h.sys.Shutdown()
	})
	return h
}

// next waits for the keeper's next cycle.
func (h *keeperHarness) next() cycleCall {
	h.t.Helper()
	select {
	case c := <-h.calls:
		return c
	case <-time.After(30 * time.Second):
		h.t.Fatal("no lease cycle started")
	}
	return cycleCall{}
}

// cycle answers the next cycle and waits until the keeper has handled its result.
func (h *keeperHarness) cycle(a cycleAnswer) (cycleCall, CycleReport) {
	h.t.Helper()
	mark := h.reports.Len()
	c := h.next()
	c.reply <- a
	var rep CycleReport
	h.reports.Await(h.t, "cycle handled", mark, 30*time.Second, func(rs []CycleReport) (bool, string) {
		if len(rs) == 0 {
			return false, "no report"
		}
		rep = rs[0]
		return true, ""
	})
	h.settle()
	return c, rep
}

// ping flushes the fake supervisor's mailbox: everything the keeper sent it before has
// been recorded when the answer comes back.
type ping struct{}

func (h *keeperHarness) settle() {
	h.t.Helper()
	if _, err := h.sys.Root.RequestFuture(h.sup, ping{}, 30*time.Second).Result(); err != nil {
		h.t.Fatal(err)
	}
}

func (h *keeperHarness) tick() { h.sys.Root.Send(h.keeper, tick{}) }

func (h *keeperHarness) lastOwned() Owned {
	all := h.owned.Since(0)
	if len(all) == 0 {
		h.t.Fatal("no Owned sent")
	}
	return all[len(all)-1]
}

func owns(accs ...store.Owned) store.CycleResult { return store.CycleResult{Owned: accs} }

func TestKeeperTrustCountsFromBeforeTheQuery(t *testing.T) {
	h := newKeeperHarness(t, true)
	t0 := h.clk.Now()
	h.cycle(cycleAnswer{advance: 2 * time.Second, res: owns(store.Owned{ID: 1, Epoch: 1, Claimed: true})})
	g := h.lastOwned().Accounts[1].Gate
	until, ok := g.TrustedUntil()
	if want := t0.Add(keeperTiming.Trust()); !ok || !until.Equal(want) {
		t.Fatalf("trusted until %v (%v), want %v: trust counts from before the query", until, ok, want)
	}
	if rem := g.Remaining(); rem != keeperTiming.Trust()-2*time.Second {
		t.Fatalf("remaining %v after a 2 s cycle, want %v", rem, keeperTiming.Trust()-2*time.Second)
	}
}

func TestKeeperFailedCycleLeavesTheDeadline(t *testing.T) {
	h := newKeeperHarness(t, true)
	h.cycle(cycleAnswer{res: owns(store.Owned{ID: 1, Epoch: 1})})
	g := h.lastOwned().Accounts[1].Gate
	before, _ := g.TrustedUntil()
	h.clk.Advance(10 * time.Second)
	h.tick()
	_, rep := h.cycle(cycleAnswer{advance: time.Second, err: errors.New("connection reset")})
	if rep.Err == nil {
		t.Fatal("the cycle should have failed")
	}
	after, ok := g.TrustedUntil()
	if !ok || !after.Equal(before) || !g.HoldsLease() {
		t.Fatalf("after a failed cycle trusted until %v (%v, open %v), want %v unchanged", after, ok, g.HoldsLease(), before)
	}
	if nodeUntil, _ := h.nodeGate.TrustedUntil(); !nodeUntil.Equal(before) {
		t.Fatalf("node gate moved to %v after a failed cycle, want %v", nodeUntil, before)
	}
}

func TestKeeperSlowCycleGrantsLessNeverMore(t *testing.T) {
	h := newKeeperHarness(t, true)
	h.cycle(cycleAnswer{res: owns(store.Owned{ID: 1, Epoch: 1})})
	g := h.lastOwned().Accounts[1].Gate
	h.clk.Advance(5 * time.Second)
	h.tick()
	h.cycle(cycleAnswer{advance: 10 * time.Second, res: owns(store.Owned{ID: 1, Epoch: 1})})
	if rem := g.Remaining(); rem != keeperTiming.Trust()-10*time.Second {
		t.Fatalf("a 10 s cycle left %v of trust, want %v", rem, keeperTiming.Trust()-10*time.Second)
	}
	// A cycle that outlasts the whole trust grants nothing.
	h.clk.Advance(keeperTiming.Trust()) // the earlier trust has run out
	h.tick()
	h.cycle(cycleAnswer{advance: keeperTiming.Trust() + time.Second, res: owns(store.Owned{ID: 1, Epoch: 1})})
	if g.HoldsLease() || h.nodeGate.HoldsLease() {
		t.Fatal("a cycle slower than the trust it grants opened a gate")
	}
}

func TestKeeperRevokesLostAccountsAtOnce(t *testing.T) {
	h := newKeeperHarness(t, true)
	h.cycle(cycleAnswer{res: owns(store.Owned{ID: 1, Epoch: 1}, store.Owned{ID: 2, Epoch: 4})})
	first := h.lastOwned()
	g1, g2 := first.Accounts[1].Gate, first.Accounts[2].Gate
	h.clk.Advance(time.Second)
	h.tick()
	// 1 was lost and claimed again (a new epoch); 2 was lost; both gates had trust left.
	h.cycle(cycleAnswer{res: owns(store.Owned{ID: 1, Epoch: 2, Claimed: true})})
	if g1.HoldsLease() || g2.HoldsLease() {
		t.Fatalf("lost accounts' gates still open: epoch-1 gate %v, account-2 gate %v", g1.HoldsLease(), g2.HoldsLease())
	}
	now := h.lastOwned()
	if _, ok := now.Accounts[2]; ok {
		t.Fatal("a lost account is still reported owned")
	}
	n1 := now.Accounts[1]
	if n1.Gate == g1 || n1.Gate.Epoch() != 2 || !n1.Gate.HoldsLease() {
		t.Fatalf("account 1 at epoch 2 needs a new open gate of its own (same gate: %v, epoch %d)", n1.Gate == g1, n1.Gate.Epoch())
	}
}

func TestKeeperCycleDeadlineIsShorterThanTheTrust(t *testing.T) {
	if keeperTiming.CycleDeadline() >= keeperTiming.Trust() {
		t.Fatalf("cycle deadline %v must be shorter than the trust %v", keeperTiming.CycleDeadline(), keeperTiming.Trust())
	}
	h := newKeeperHarness(t, true)
	c := h.next()
	dl, ok := c.ctx.Deadline()
	c.reply <- cycleAnswer{}
	if !ok {
		t.Fatal("the cycle runs without a deadline")
	}
	if left := time.Until(dl); left > keeperTiming.CycleDeadline() || left >= keeperTiming.Trust() {
		t.Fatalf("the cycle may run %v, want ≤ %v (shorter than the trust %v)", left, keeperTiming.CycleDeadline(), keeperTiming.Trust())
	}
}

func TestKeeperFencedGateStaysClosedUntilANewEpoch(t *testing.T) {
	h := newKeeperHarness(t, true)
	h.cycle(cycleAnswer{res: owns(store.Owned{ID: 1, Epoch: 3})})
	g := h.lastOwned().Accounts[1].Gate
	g.Fence() // an order came back fenced: the trade server saw a newer token
	h.tick()
	c, _ := h.cycle(cycleAnswer{res: owns(store.Owned{ID: 1, Epoch: 3})}) // renewed at the same epoch
	if len(c.req.Held) != 1 {
		t.Fatalf("held before the fence: %v", c.req.Held)
	}
	if g.HoldsLease() {
		t.Fatal("a renewal at the same epoch reopened a fenced gate")
	}
	if _, ok := h.lastOwned().Accounts[1]; ok {
		t.Fatal("a fenced account is still handed to the supervisor at its old epoch")
	}
	h.tick()
	c, _ = h.cycle(cycleAnswer{res: owns(store.Owned{ID: 1, Epoch: 4, Claimed: true})})
	if len(c.req.Held) != 0 {
		t.Fatalf("a fenced lease was renewed again: %v", c.req.Held)
	}
	n := h.lastOwned().Accounts[1]
	if n.Gate == nil || n.Gate == g || !n.Gate.HoldsLease() {
		t.Fatal("claimed with a new epoch, the account needs a new open gate")
	}
}

func TestKeeperHaltRevokesEveryGateAndACycleInFlightCannotReopen(t *testing.T) {
	h := newKeeperHarness(t, true)
	h.cycle(cycleAnswer{res: owns(store.Owned{ID: 1, Epoch: 1}, store.Owned{ID: 2, Epoch: 1})})
	first := h.lastOwned()
	h.tick()
	inFlight := h.next()
	if _, err := h.sys.Root.RequestFuture(h.keeper, Halt{}, 30*time.Second).Result(); err != nil {
		t.Fatal(err)
	}
	for id, o := range first.Accounts {
		if o.Gate.HoldsLease() {
			t.Fatalf("account %d: gate open after Halt returned", id)
		}
	}
	if h.nodeGate.HoldsLease() {
		t.Fatal("node gate open after Halt returned")
	}
	marks, reports := h.owned.Len(), h.reports.Len()
	// The cycle commits after all (the commit raced the cancel).
	inFlight.reply <- cycleAnswer{res: owns(store.Owned{ID: 1, Epoch: 1}, store.Owned{ID: 2, Epoch: 1})}
	h.reports.Await(t, "the late cycle handled", reports, 30*time.Second, func(rs []CycleReport) (bool, string) {
		return len(rs) > 0, "no report"
	})
	h.settle()
	for id, o := range first.Accounts {
		if o.Gate.HoldsLease() {
			t.Fatalf("account %d: a cycle in flight at Halt reopened the gate", id)
		}
	}
	if h.nodeGate.HoldsLease() || h.owned.Len() != marks {
		t.Fatal("a cycle in flight at Halt reopened the node gate or reported accounts")
	}
}

// TestKeeperShutdownFitsOneBudgetAndReleasesNoRunningAccount: the accounts never stop and
// the flush never answers. The shutdown still ends within its budget, but releases
// nothing: an actor may still be sending, and a new owner would copy beside it. The
// leases run out as a crashed node's would.
func TestKeeperShutdownFitsOneBudgetAndReleasesNoRunningAccount(t *testing.T) {
	h := newKeeperHarness(t, false) // accounts and flush never answer
	h.cycle(cycleAnswer{res: owns(store.Owned{ID: 1, Epoch: 1}, store.Owned{ID: 2, Epoch: 5})})
	budget := 2 * time.Second
	start := time.Now()
	res, err := h.sys.Root.RequestFuture(h.keeper, Shutdown{Deadline: start.Add(budget)}, 30*time.Second).Result()
	if err != nil {
		t.Fatal(err)
	}
	// Before the budget was split the accounts alone could take 60 s; the margin here is
	// for a loaded machine, not a timing claim.
	if took := time.Since(start); took > budget+10*time.Second {
		t.Fatalf("shutdown took %v with a budget of %v", took, budget)
	}
	if done, ok := res.(ShutdownDone); !ok || done.Released != 0 {
		t.Fatalf("shutdown answered %#v, want nothing released", res)
	}
	for _, rel := range h.releases.Since(0) {
		if len(rel) > 0 {
			t.Fatalf("released %v while the accounts had not stopped", rel)
		}
	}
}

// TestKeeperShutdownReleasesOnlyAccountsThatEndedWithNothingInFlight: every gate is closed
// before the accounts are asked to stop; then 1 ended cleanly, 2 had not ended by the
// deadline, 3 ended with an order of unknown outcome that may still execute, and 4 with
// one that can no longer execute. Only 1 and 4 are released, after the stop and the flush.
func TestKeeperShutdownReleasesOnlyAccountsThatEndedWithNothingInFlight(t *testing.T) {
	h := newKeeperHarness(t, true)
	h.cycle(cycleAnswer{res: owns(store.Owned{ID: 1, Epoch: 1}, store.Owned{ID: 2, Epoch: 1}, store.Owned{ID: 3, Epoch: 2}, store.Owned{ID: 4, Epoch: 1})})
	h.mu.Lock()
	h.stopped = AccountsStopped{Running: []int64{2}, HeldBack: map[int64]time.Time{3: h.clk.Now().Add(30 * time.Second), 4: h.clk.Now()}}
	h.mu.Unlock()
	res, err := h.sys.Root.RequestFuture(h.keeper, Shutdown{Deadline: time.Now().Add(30 * time.Second)}, 60*time.Second).Result()
	if err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	open := h.openAtStop
	h.mu.Unlock()
	if len(open) > 0 {
		t.Fatalf("gates %v still open when the accounts were asked to stop", open)
	}
	if done, ok := res.(ShutdownDone); !ok || done.Released != 2 {
		t.Fatalf("shutdown answered %#v, want 2 released", res)
	}
	if rel := h.releases.Since(0); len(rel) != 1 || fmt.Sprint(rel[0]) != "[{1 1} {4 1}]" {
		t.Fatalf("released %v, want only 1 and 4", rel)
	}
	if got := strings.Join(h.steps.Since(0), " "); got != "stop flush release" {
		t.Fatalf("shutdown steps %q, want \"stop flush release\"", got)
	}
}

func TestKeeperCycleInFlightAtShutdownNeverClaims(t *testing.T) {
	h := newKeeperHarness(t, true)
	h.cycle(cycleAnswer{res: owns(store.Owned{ID: 1, Epoch: 1})})
	h.tick()
	inFlight := h.next()
	marks := h.owned.Len()
	f := h.sys.Root.RequestFuture(h.keeper, Shutdown{Deadline: time.Now().Add(30 * time.Second)}, 30*time.Second)
	// The shutdown tells the cycle in flight to skip its claim; it is not cancelled (a
	// cancel racing the commit could leave claims the node never learns of).
	testwait.For(t, "claim skipped", 30*time.Second, func() (bool, string) {
		return inFlight.req.SkipClaim != nil && inFlight.req.SkipClaim(), "SkipClaim still false"
	})
	if inFlight.ctx.Err() != nil {
		t.Fatal("the shutdown cancelled the cycle in flight")
	}
	// It had claimed before the shutdown came: nothing starts on the claim, and it is
	// released with the rest.
	inFlight.reply <- cycleAnswer{res: owns(store.Owned{ID: 1, Epoch: 1}, store.Owned{ID: 9, Epoch: 1, Claimed: true})}
	if _, err := f.Result(); err != nil {
		t.Fatal(err)
	}
	h.settle()
	if h.owned.Len() != marks {
		t.Fatal("a cycle in flight at shutdown handed accounts to the supervisor")
	}
	rel := h.releases.Since(0)
	if len(rel) != 1 || len(rel[0]) != 2 || rel[0][0].ID != 1 || rel[0][1].ID != 9 {
		t.Fatalf("released %v, want accounts 1 and 9", rel)
	}
}

// TestKeeperRevokesLostAccountsBeforeAnyGateIsConfirmed: in one cycle account 1 is lost,
// account 3 is new and account 5 renewed. The lost gate must already be closed when the
// first gate of the cycle is created or confirmed (gates are handled in id order, so the
// new gate of 3 comes before the renewal of 5).
func TestKeeperRevokesLostAccountsBeforeAnyGateIsConfirmed(t *testing.T) {
	h := newKeeperHarness(t, true)
	h.cycle(cycleAnswer{res: owns(store.Owned{ID: 1, Epoch: 1}, store.Owned{ID: 5, Epoch: 1})})
	first := h.lastOwned()
	g1, g5 := first.Accounts[1].Gate, first.Accounts[5].Gate
	g5Before, _ := g5.TrustedUntil()
	var mu sync.Mutex
	var seen []string
	hook := func() {
		if !calledFrom("NewEpochGate") {
			return
		}
		_, open := g1.TrustedUntil() // reads no clock
		g5Now, _ := g5.TrustedUntil()
		mu.Lock()
		seen = append(seen, fmt.Sprintf("lost gate open=%v, renewed gate confirmed=%v", open, !g5Now.Equal(g5Before)))
		mu.Unlock()
	}
	h.clk.hook.Store(&hook)
	h.clk.Advance(time.Second)
	h.tick()
	h.cycle(cycleAnswer{res: owns(store.Owned{ID: 3, Epoch: 1, Claimed: true}, store.Owned{ID: 5, Epoch: 1})})
	h.clk.hook.Store(nil)
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != "lost gate open=false, renewed gate confirmed=false" {
		t.Fatalf("when the cycle's first gate was created: %v; want the lost gate closed and no gate confirmed yet", seen)
	}
}

// calledFrom reports whether a function whose name ends in name is on the caller's stack.
func calledFrom(name string) bool {
	pc := make([]uintptr, 32)
	frames := runtime.CallersFrames(pc[:runtime.Callers(2, pc)])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, "."+name) {
			return true
		}
		if !more {
			return false
		}
	}
}

// TestKeeperWakeRunsAClaim: a Wake (a release notification) runs a cycle long before the
// interval (an hour here), reported as woken.
func TestKeeperWakeRunsAClaim(t *testing.T) {
	h := newKeeperHarness(t, true)
	h.cycle(cycleAnswer{res: owns()})
	for range 3 {
		h.sys.Root.Send(h.keeper, Wake{})
	}
	if _, rep := h.cycle(cycleAnswer{res: owns(store.Owned{ID: 1, Epoch: 1, Claimed: true})}); rep.Trigger != TriggerWake {
		t.Fatalf("cycle after a wake reported trigger %v", rep.Trigger)
	}
}

// TestKeeperClaimsWhenTheEarliestForeignLeaseEnds: a cycle that reports the end of another
// node's lease gets a claim scheduled for that moment, long before the interval.
func TestKeeperClaimsWhenTheEarliestForeignLeaseEnds(t *testing.T) {
	h := newKeeperHarness(t, true)
	h.cycle(cycleAnswer{res: store.CycleResult{NextForeignExpiry: 50 * time.Millisecond}})
	if _, rep := h.cycle(cycleAnswer{res: owns()}); rep.Trigger != TriggerLeaseEnd {
		t.Fatalf("cycle after a foreign lease ended reported trigger %v", rep.Trigger)
	}
}

// TestKeeperLeaseEndWaitCountsFromTheResult: the database measured the wait from a moment
// before the result arrived; counting it from the cycle's start would claim too early.
func TestKeeperLeaseEndWaitCountsFromTheResult(t *testing.T) {
	clk := newFakeClock()
	started := clk.Now()
	clk.Advance(2 * time.Second) // the cycle took 2 s: its result arrived now
	done := clk.Now()
	clk.Advance(100 * time.Millisecond) // handled a little later
	if got, want := leaseEndDelay(clk, done, 10*time.Second), 10*time.Second+leaseEndMargin-100*time.Millisecond; got != want {
		t.Fatalf("delay %v, want %v (from the result, not from %v)", got, want, started)
	}
}

// TestKeeperHandOff: a node over its fair share (plus slack) hands back its surplus, the
// highest ids: their gates close at once, the Supervisor stops their actors, and only then
// are they released by (id, epoch). A cycle that renewed them before the release committed
// does not bring them back; once a cycle no longer holds them, a new claim (a new epoch)
// is owned again.
func TestKeeperHandOff(t *testing.T) {
	h := newKeeperHarness(t, true)
	at := func(epoch int64, ids ...int64) store.CycleResult {
		var res store.CycleResult
		for _, id := range ids {
			res.Owned = append(res.Owned, store.Owned{ID: id, Epoch: epoch})
		}
		res.Share = 2
		res.View = store.ClusterView{Followers: 4, Nodes: []store.NodeLoad{{ID: "m", Capacity: 10}, {ID: "n", Capacity: 10}}}
		return res
	}
	_, rep := h.cycle(cycleAnswer{res: at(1, 1, 2, 3, 4)})
	if rep.HandingOff != 2 || rep.Share != 2 || rep.LiveNodes != 2 {
		t.Fatalf("report %+v: want 2 handed off of 4 at a share of 2", rep)
	}
	gates := h.lastOwned().Accounts
	h.handed.Await(t, "hand-off released", 0, 30*time.Second, func(n []int) (bool, string) { return len(n) == 1 && n[0] == 2, fmt.Sprint(n) })
	if stops := h.stopSome.Since(0); len(stops) != 1 || fmt.Sprint(stops[0]) != "[4 3]" {
		t.Fatalf("StopSome %v, want [[4 3]]", stops)
	}
	if rel := h.handoffs.Since(0); len(rel) != 1 || fmt.Sprint(rel[0]) != "[{4 1} {3 1}]" {
		t.Fatalf("released %v, want [4 3] at epoch 1", rel)
	}
	if gates[3].Gate.HoldsLease() || gates[4].Gate.HoldsLease() || !gates[1].Gate.HoldsLease() {
		t.Fatal("the handed-off accounts' gates must be closed, the others open")
	}

	// A cycle that renewed 3 and 4 before their release committed.
	h.tick()
	call, rep := h.cycle(cycleAnswer{res: at(1, 1, 2, 3, 4)})
	if fmt.Sprint(call.req.Held) != "[{1 1} {2 1}]" {
		t.Fatalf("the cycle after the hand-off holds %v, want only 1 and 2", call.req.Held)
	}
	if owned := h.lastOwned().Accounts; len(owned) != 2 || owned[3].Gate != nil || owned[4].Gate != nil || rep.HandingOff != 0 {
		t.Fatalf("after the hand-off: owned %v, handing off %d", owned, rep.HandingOff)
	}
	// They are gone from the next result; claimed again later at a new epoch, 3 is owned.
	h.tick()
	h.cycle(cycleAnswer{res: at(1, 1, 2)})
	h.tick()
	h.cycle(cycleAnswer{res: at(1, 1, 2)})
	res := at(1, 1, 2)
	res.Owned = append(res.Owned, store.Owned{ID: 3, Epoch: 2})
	res.Share = 3
	h.tick()
	h.cycle(cycleAnswer{res: res})
	if owned := h.lastOwned().Accounts; len(owned) != 3 || !owned[3].Gate.HoldsLease() {
		t.Fatalf("a new claim of 3 is not owned: %v", owned)
	}
}

// overShare is a cycle's result at a share of 2 of 4 followers over two live nodes.
func overShare(epoch int64, ids ...int64) store.CycleResult {
	var res store.CycleResult
	for _, id := range ids {
		res.Owned = append(res.Owned, store.Owned{ID: id, Epoch: epoch})
	}
	res.Share = 2
	res.View = store.ClusterView{Followers: 4, Nodes: []store.NodeLoad{{ID: "m", Capacity: 10}, {ID: "n", Capacity: 10}}}
	return res
}

// TestKeeperHandOffFlushesBeforeItReleases: the actors stop, then the StatusWriter flushes
// (their last statuses and ticket-map rows), and only then is the lease released: the new
// owner must find what the old one wrote.
func TestKeeperHandOffFlushesBeforeItReleases(t *testing.T) {
	h := newKeeperHarness(t, true)
	h.cycle(cycleAnswer{res: overShare(1, 1, 2, 3, 4)})
	h.handed.Await(t, "hand-off released", 0, 30*time.Second, func(n []int) (bool, string) { return len(n) == 1, fmt.Sprint(n) })
	if got := strings.Join(h.steps.Since(0), " "); got != "stop flush release" {
		t.Fatalf("hand-off steps %q, want \"stop flush release\"", got)
	}
}

// TestKeeperHandOffReleasesNothingWhenTheStopFails: the handed-off accounts' actors do not
// stop in time (one may still be sending): nothing is released, and they are no longer
// renewed either; their leases run out.
func TestKeeperHandOffReleasesNothingWhenTheStopFails(t *testing.T) {
	h := newKeeperHarnessWith(t, true, func(c *KeeperConfig) { c.HandOffTimeout = 200 * time.Millisecond })
	h.mu.Lock()
	h.someFails = true
	h.mu.Unlock()
	h.cycle(cycleAnswer{res: overShare(1, 1, 2, 3, 4)})
	h.steps.Await(t, "hand-off asked to stop", 0, 30*time.Second, func(s []string) (bool, string) {
		return slices.Contains(s, "stop"), strings.Join(s, " ")
	})
	awaitHeld(t, h, "[{1 1} {2 1}]")
	if got := strings.Join(h.steps.Since(0), " "); got != "stop" || len(h.handoffs.Since(0)) != 0 {
		t.Fatalf("hand-off steps %q, releases %v: nothing may be released after a failed stop", got, h.handoffs.Since(0))
	}
}

// TestKeeperHandOffHoldsBackAnOrderOfUnknownOutcome: account 4's actor stopped with an
// order of unknown outcome that may still execute. 3 is released at once; 4 is neither
// released with it nor renewed, and is released only after that order's deadline.
func TestKeeperHandOffHoldsBackAnOrderOfUnknownOutcome(t *testing.T) {
	h := newKeeperHarness(t, true)
	until := h.clk.Now().Add(300 * time.Millisecond)
	h.mu.Lock()
	h.someHeld = map[int64]time.Time{4: until}
	h.mu.Unlock()
	h.cycle(cycleAnswer{res: overShare(1, 1, 2, 3, 4)})
	h.handoffs.Await(t, "3 released", 0, 30*time.Second, func(r [][]store.Held) (bool, string) {
		return len(r) > 0, fmt.Sprint(r)
	})
	if first := h.handoffs.Since(0)[0]; fmt.Sprint(first) != "[{3 1}]" {
		t.Fatalf("the hand-off released %v at once, want only 3 (4 is held back)", first)
	}
	// The keeper has taken 3's release in (not only made it): until then a cycle may still
	// renew 3, harmlessly (the renewal is fenced by owner), but not what this test checks.
	h.handed.Await(t, "3's release taken in", 0, 30*time.Second, func(n []int) (bool, string) {
		return len(n) == 1 && n[0] == 1, fmt.Sprint(n)
	})
	h.tick()
	if call, _ := h.cycle(cycleAnswer{res: overShare(1, 1, 2, 3, 4)}); fmt.Sprint(call.req.Held) != "[{1 1} {2 1}]" {
		t.Fatalf("a held-back hand-off is renewed: the cycle holds %v", call.req.Held)
	}
	// Once its order can no longer execute it is released after all.
	h.handoffs.Await(t, "4 released", 0, 30*time.Second, func(r [][]store.Held) (bool, string) {
		return len(r) == 2 && fmt.Sprint(r[1]) == "[{4 1}]", fmt.Sprint(r)
	})
}

// awaitHeld runs cycles (each renewing 1 to 4) until the keeper holds exactly want.
func awaitHeld(t *testing.T, h *keeperHarness, want string) {
	t.Helper()
	testwait.For(t, "the keeper holds "+want, 30*time.Second, func() (bool, string) {
		h.tick()
		call, _ := h.cycle(cycleAnswer{res: overShare(1, 1, 2, 3, 4)})
		return fmt.Sprint(call.req.Held) == want, fmt.Sprint(call.req.Held)
	})
}

// TestKeeperHandOffReleasesNothingAfterAFailedFlush: when the flush fails the handed-off
// leases are not released (the new owner could miss ticket-map rows still queued) and not
// renewed either: they run out, as a crashed node's would, while the writer may retry.
func TestKeeperHandOffReleasesNothingAfterAFailedFlush(t *testing.T) {
	h := newKeeperHarness(t, true)
	h.mu.Lock()
	h.flushErr = errors.New("database unreachable")
	h.mu.Unlock()
	h.cycle(cycleAnswer{res: overShare(1, 1, 2, 3, 4)})
	h.steps.Await(t, "hand-off flushed", 0, 30*time.Second, func(s []string) (bool, string) {
		return slices.Contains(s, "flush"), strings.Join(s, " ")
	})
	// Cycles until the hand-off has ended (its accounts are no longer renewed); each one
	// still renewed them (the hand-off was under way) and reports them.
	awaitHeld(t, h, "[{1 1} {2 1}]")
	if got := strings.Join(h.steps.Since(0), " "); got != "stop flush" || len(h.handoffs.Since(0)) != 0 {
		t.Fatalf("hand-off steps %q, releases %v: nothing may be released after a failed flush", got, h.handoffs.Since(0))
	}
}
