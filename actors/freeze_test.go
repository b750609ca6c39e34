package actors_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix"
	"github.com/snapcopier/copier/broker/sim/fixfront"
	"github.com/snapcopier/copier/store"
)

// freezingBroker stands for a process that freezes between the gate check and the send:
// while frozen, every order call blocks just before it reaches the trade server. Over FIX
// (onWire) the call goes out at once and the order message is what is held, at the
// venue's front as it arrives: an order delayed on the wire.
type freezingBroker struct {
	broker.Broker
	// noDeadline strips the order's deadline: a venue that cannot check one (MetaTrader),
	// where only the token and the marker are left.
	noDeadline bool
	// onWire: the front calls wait for every order message (fixfront.Options.OnOrder);
	// the session calls go straight through and their results are recorded.
	onWire  bool
	mu      sync.Mutex
	release chan struct{} // nil: not frozen
	blocked int
	held    map[string]bool  // ClOrdIDs held on the wire while frozen
	results map[string]error // by request id, every order's result (onWire)
}

func (f *freezingBroker) Connect(ctx context.Context, c broker.Credentials) (broker.Session, error) {
	s, err := f.Broker.Connect(ctx, c)
	if err != nil {
		return nil, err
	}
	return &freezingSession{Session: s, f: f}, nil
}

func (f *freezingBroker) freeze() {
	f.mu.Lock()
	f.release = make(chan struct{})
	f.mu.Unlock()
}

func (f *freezingBroker) thaw() {
	f.mu.Lock()
	close(f.release)
	f.release = nil
	f.mu.Unlock()
}

func (f *freezingBroker) blockedOrders() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.blocked
}

func (f *freezingBroker) wait() {
	f.mu.Lock()
	ch := f.release
	if ch != nil {
		f.blocked++
	}
	f.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// onOrder is the front's hook: an order message held while frozen.
func (f *freezingBroker) onOrder(_, clOrdID string) {
	f.mu.Lock()
	if f.release != nil {
		f.held[clOrdID] = true
	}
	f.mu.Unlock()
	f.wait()
}

// record keeps an order's result (onWire).
func (f *freezingBroker) record(o broker.Order, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.results[o.RequestID.String()] = err
}

// heldResults returns the results of the orders held on the wire so far (missing: no
// result yet) and how many were held.
func (f *freezingBroker) heldResults() (map[string]error, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]error{}
	for id := range f.held {
		if err, ok := f.results[id]; ok {
			out[id] = err
		}
	}
	return out, len(f.held)
}

type freezingSession struct {
	broker.Session
	f *freezingBroker
}

// The request was already on its way when the process froze: it reaches the trade server
// after the thaw whatever its context says (the sender's context deadline cannot stop
// it; only the receiver's deadline check or the token can).
func (s *freezingSession) Open(ctx context.Context, r broker.OpenRequest) (broker.OrderResult, error) {
	return s.send(&r.Order, func() (broker.OrderResult, error) { return s.Session.Open(context.WithoutCancel(ctx), r) })
}

func (s *freezingSession) ClosePosition(ctx context.Context, r broker.CloseRequest) (broker.OrderResult, error) {
	return s.send(&r.Order, func() (broker.OrderResult, error) { return s.Session.ClosePosition(context.WithoutCancel(ctx), r) })
}

func (s *freezingSession) Modify(ctx context.Context, r broker.ModifyRequest) (broker.OrderResult, error) {
	return s.send(&r.Order, func() (broker.OrderResult, error) { return s.Session.Modify(context.WithoutCancel(ctx), r) })
}

// send holds the call while frozen (unless the wire holds the message instead), strips the
// deadline where the venue cannot check one, and records the result on the wire.
func (s *freezingSession) send(o *broker.Order, call func() (broker.OrderResult, error)) (broker.OrderResult, error) {
	if !s.f.onWire {
		s.f.wait()
	}
	s.f.strip(o)
	res, err := call()
	if s.f.onWire {
		s.f.record(*o, err)
	}
	return res, err
}

func (f *freezingBroker) strip(o *broker.Order) {
	if f.noDeadline {
		o.Deadline = time.Time{}
	}
}

// TestFreezeLongerThanTheFence: n1 passes its gate, then freezes in the send for longer
// than the fence while cut from the database; n2 takes over and copies; then n1's held
// orders reach the server. They carry the deadline of the gate check that let them
// through, and the server refuses them as expired. On a venue that cannot check a
// deadline: with token enforcement they are fenced; without it the duplicates they open
// are closed by n2's reconcile.
func TestFreezeLongerThanTheFence(t *testing.T) {
	for _, sc := range []freeze{{enforce: false, deadline: true}, {enforce: true, noDeadline: true}, {enforce: false, noDeadline: true}} {
		t.Run(fmt.Sprintf("enforce=%v,deadline=%v", sc.enforce, !sc.noDeadline), func(t *testing.T) { freezeScenario(t, sc) })
	}
}

// TestFreezeLongerThanTheFenceOverFIX is the freeze over FIX: each node talks to the
// simulator through a FIX front of its own, and n1's orders are held on the wire, at its
// front, from before the takeover until after n2 has copied. They carry the deadline
// (9003) and token (9001) of the gate check that let them out: the front refuses them as
// expired before they reach the server; without a deadline, the server fences them by
// the token when it enforces tokens.
func TestFreezeLongerThanTheFenceOverFIX(t *testing.T) {
	for _, sc := range []freeze{{fix: true, deadline: true}, {fix: true, enforce: true, noDeadline: true}} {
		t.Run(fmt.Sprintf("enforce=%v,deadline=%v", sc.enforce, !sc.noDeadline), func(t *testing.T) { freezeScenario(t, sc) })
	}
}

// TestOrderQueuedAcrossALoseAndReclaim: n1's orders wait in the send while n1 loses its
// accounts to n2, n2 lets them go and n1 claims them again with a new epoch. The waiting
// orders were checked under the old epoch and carry its deadline: the server refuses
// every one, and no order by any node executes after its deadline.
func TestOrderQueuedAcrossALoseAndReclaim(t *testing.T) {
	freezeScenario(t, freeze{deadline: true, reclaim: true})
}

type freeze struct {
	enforce    bool
	noDeadline bool // the venue cannot check deadlines
	deadline   bool // expect the held orders refused as expired
	reclaim    bool // n2 lets go and n1 claims again before the thaw
	fix        bool // each node reaches the simulator over FIX, through a front of its own
}

// fixTo returns a FIX broker through a new FIX front of its own in front of the cluster's
// simulator; n1's replies are waited for as long as the freeze may last.
func fixTo(t *testing.T, c *cluster, front fixfront.Options) broker.Broker {
	t.Helper()
	f, err := fixfront.Start("127.0.0.1:0", c.sim, c.sim, front)
	must(t, err)
	t.Cleanup(func() { _ = f.Close() })
	b, err := fix.New(fix.Config{Addr: f.Addr(), ReplyTimeout: time.Minute, ReconnectMin: 20 * time.Millisecond})
	must(t, err)
	return b
}

func freezeScenario(t *testing.T, sc freeze) {
	enforce := sc.enforce
	c := newCluster(t, 1, 10)
	ctx := context.Background()
	must(t, c.sim.SetOptions(ctx, broker.ServerOptions{EnforceTokens: enforce}))
	db := c.proxiedPool("pg-n1")

	fb := &freezingBroker{Broker: c.sim, noDeadline: sc.noDeadline, onWire: sc.fix, held: map[string]bool{}, results: map[string]error{}}
	var n2Broker broker.Broker = c.sim
	if sc.fix {
		fb.Broker = fixTo(t, c, fixfront.Options{OnOrder: fb.onOrder})
		n2Broker = fixTo(t, c, fixfront.Options{})
	}
	n1, err := actors.Start(ctx, actors.Config{NodeID: "n1", Platform: "sim", Capacity: 100, Lease: shortLease, ReconcileEvery: -1,
		OrderTimeout: time.Minute}, // the frozen orders outlive the freeze, however slow the takeover
		actors.Deps{Pool: db.pool, Broker: fb, Logger: zerolog.Nop()})
	must(t, err)
	t.Cleanup(func() {
		// Reconnected first: a node cut from its database spends its whole shutdown
		// budget (here 20 s) trying to release.
		db.cut(false)
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		_ = n1.Stop(sctx)
	})
	c.eventually("n1 owns all", 30*time.Second, c.allOwned("n1"))
	c.masterOpen(1, "EURUSD", broker.Buy, 0.1, 0, 0)
	c.eventually("copied", 30*time.Second, c.converged)

	// Freeze: n1's orders block after the gate check (every follower's, while the gate is
	// surely open), then n1 is cut from the database.
	fb.freeze()
	x := c.masterOpen(1, "GBPUSD", broker.Sell, 0.2, 0, 0)
	c.eventually("n1 passed its gates and froze in the send", 30*time.Second, func() (bool, string) {
		return fb.blockedOrders() >= len(c.followers), fmt.Sprint(fb.blockedOrders(), " blocked")
	})
	db.cut(true)
	// n2 takes over once the leases expire, and its reconcile copies x.
	c.nodes["n2"] = nil
	n2, err := actors.Start(ctx, actors.Config{NodeID: "n2", Platform: "sim", Capacity: 100, Lease: shortLease, ReconcileEvery: 500 * time.Millisecond},
		actors.Deps{Pool: c.db.NewPool(t, store.Options{}), Broker: n2Broker, Logger: zerolog.Nop()})
	must(t, err)
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		_ = n2.Stop(sctx)
	})
	c.eventually("n2 owns all", 30*time.Second, c.allOwned("n2"))
	c.eventually("n2 copied x", 30*time.Second, c.converged)
	if sc.reclaim {
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		must(t, n2.Stop(sctx))
		cancel()
		before := c.owners()
		db.cut(false)
		c.eventually("n1 claimed its accounts again", 30*time.Second, c.allOwned("n1"))
		for id, r := range c.owners() {
			if r.Epoch <= before[id].Epoch {
				t.Fatalf("account %d: epoch %d after the reclaim, want above %d", id, r.Epoch, before[id].Epoch)
			}
		}
	}

	// Thaw: n1's held orders reach the server with the old epoch.
	logBefore, err := c.sim.OrderLog(ctx, 0, 0)
	must(t, err)
	fb.thaw()
	if sc.fix && sc.deadline {
		checkRefusedOnTheWire(t, c, fb, logBefore[len(logBefore)-1].Seq)
		checkDeadlines(t, c)
		c.eventually("converged", 30*time.Second, c.converged)
		return
	}
	var stale []broker.OrderLogEntry
	c.eventually("n1's held orders reached the server", 10*time.Second, func() (bool, string) {
		log, err := c.sim.OrderLog(ctx, logBefore[len(logBefore)-1].Seq, 0)
		must(t, err)
		stale = stale[:0]
		for _, e := range log {
			if e.Node == "n1" && e.Op == broker.OpOpen {
				stale = append(stale, e)
			}
		}
		return len(stale) >= len(c.followers), fmt.Sprint(len(stale), " arrived")
	})
	for _, e := range stale {
		if sc.deadline && (e.Executed || e.Result != broker.CodeExpired) {
			t.Errorf("an order held past its deadline was not refused as expired: %+v", e)
		}
		if !sc.deadline && enforce && (e.Executed || e.Result != broker.CodeFencedToken) {
			t.Errorf("stale order accepted with token enforcement: %+v", e)
		}
		if e.Comment != "" && !strings.HasSuffix(e.Comment, fmt.Sprint(x.Ticket)) {
			t.Errorf("unexpected stale order %+v", e)
		}
	}
	if sc.deadline {
		checkDeadlines(t, c)
	}
	if !sc.deadline && !enforce && len(c.duplicateOpens()) == 0 {
		t.Error("without enforcement the stale orders should have opened duplicates for n2 to repair")
	}
	// Either way nothing is left duplicated.
	c.eventually("duplicates repaired", 30*time.Second, c.converged)
}

// checkRefusedOnTheWire waits for the results of the orders held on the wire: every one
// refused as expired by the front, none of them in the server's order log after seq.
func checkRefusedOnTheWire(t *testing.T, c *cluster, fb *freezingBroker, seq int64) {
	t.Helper()
	var got map[string]error
	c.eventually("n1's held orders were answered", 30*time.Second, func() (bool, string) {
		var held int
		got, held = fb.heldResults()
		return held >= len(c.followers) && len(got) == held, fmt.Sprint(len(got), " of ", held, " answered")
	})
	for id, err := range got {
		if broker.ClassOf(err) != broker.ErrExpired {
			t.Errorf("order %s held on the wire past its deadline: %v, want expired", id, err)
		}
	}
	log, err := c.sim.OrderLog(context.Background(), seq, 0)
	must(t, err)
	for _, e := range log {
		if got[e.RequestID.String()] != nil || e.Node == "n1" {
			t.Errorf("an order n1 sent before the freeze reached the server after it: %+v", e)
		}
	}
}

// checkDeadlines reads the simulator's order log: every node's order carries a deadline,
// and none executed after it (by the server's clock).
func checkDeadlines(t *testing.T, c *cluster) {
	t.Helper()
	log, err := c.sim.OrderLog(context.Background(), 0, 0)
	must(t, err)
	for _, e := range log {
		if e.Master {
			continue
		}
		if e.Deadline.IsZero() {
			t.Errorf("order without a deadline: %+v", e)
		} else if e.Executed && e.ServerTime.After(e.Deadline) {
			t.Errorf("order executed %v after its deadline: %+v", e.ServerTime.Sub(e.Deadline), e)
		}
	}
}
