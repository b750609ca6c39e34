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
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/reconcile/follower"
	"github.com/snapcopier/copier/store"
)

// TestUnknownOutcomeOnTheEventPathReconcilesAtOnce: a copy made from a master event times
// out with an unknown outcome; the account asks the Reconciler at once, counted under
// unknown_outcome, not at the next tick or master event.
func TestUnknownOutcomeOnTheEventPathReconcilesAtOnce(t *testing.T) {
	c := newCluster(t, 1, 1)
	ctx := context.Background()
	mark := c.signals.Len()
	n1 := c.start("n1", 10, nil)
	c.awaitIdle("follower loaded and in step", mark, c.followers)
	f := c.followers[0]
	must(t, c.sim.SetFaults(ctx, fmt.Sprintf("f%d", f), broker.Faults{TimeoutRate: 1}))
	mark = c.signals.Len()
	c.masterOpen(1, "EURUSD", broker.Buy, 0.1, 0, 0)
	c.awaitSignals("the repair after the unknown outcome", mark, func(sigs []actors.Signal) (bool, string) {
		for _, s := range sigs {
			if s.Kind == actors.SignalReconcileStarted && s.Account == f {
				if s.Cause != "unknown_outcome" {
					t.Fatalf("the first reconcile after an unknown outcome ran for %q", s.Cause)
				}
				return true, ""
			}
		}
		return false, "no reconcile yet"
	})
	must(t, c.sim.SetFaults(ctx, fmt.Sprintf("f%d", f), broker.Faults{}))
	c.eventually("copied", 30*time.Second, c.converged)
	if n1.Metrics().Reconciles(follower.CauseUnknown) == 0 {
		t.Fatal("unknown_outcome reconciles not counted")
	}
}

// tokenRecorder records, per account, the session calls in order.
type tokenRecorder struct {
	broker.Broker
	mu    sync.Mutex
	calls map[string][]string
	bad   []string // requests whose context outlives their deadline, or whose deadline outlives the trust
}

// bound checks that a request's context ends no later than the deadline it carries, and
// that deadline no later than one trust from now: both come from the gate's ticket.
func (r *tokenRecorder) bound(ctx context.Context, what string, o broker.Order) {
	dl, ok := ctx.Deadline()
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case o.Deadline.IsZero():
		r.bad = append(r.bad, what+": no deadline")
	case !ok || dl.After(o.Deadline.Add(50*time.Millisecond)):
		r.bad = append(r.bad, fmt.Sprintf("%s: context ends %v after the carried deadline", what, dl.Sub(o.Deadline)))
	case time.Until(o.Deadline) > shortLease.Lease-shortLease.Fence:
		r.bad = append(r.bad, fmt.Sprintf("%s: deadline %v ahead, beyond the trust", what, time.Until(o.Deadline)))
	}
}

func (r *tokenRecorder) add(login, call string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls[login] = append(r.calls[login], call)
}

func (r *tokenRecorder) of(login string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls[login]...)
}

func (r *tokenRecorder) Connect(ctx context.Context, cr broker.Credentials) (broker.Session, error) {
	s, err := r.Broker.Connect(ctx, cr)
	if err != nil {
		return nil, err
	}
	r.add(cr.Login, "connect")
	return &tokenRecordingSession{Session: s, r: r, login: cr.Login}, nil
}

type tokenRecordingSession struct {
	broker.Session
	r     *tokenRecorder
	login string
}

func (s *tokenRecordingSession) Positions(ctx context.Context) ([]broker.Position, error) {
	s.r.add(s.login, "positions")
	return s.Session.Positions(ctx)
}

func (s *tokenRecordingSession) Open(ctx context.Context, o broker.OpenRequest) (broker.OrderResult, error) {
	s.r.add(s.login, fmt.Sprintf("open:%d", o.Token))
	s.r.bound(ctx, "open", o.Order)
	return s.Session.Open(ctx, o)
}

func (s *tokenRecordingSession) Fence(ctx context.Context, o broker.Order) error {
	s.r.add(s.login, fmt.Sprintf("fence:%d", o.Token))
	s.r.bound(ctx, "fence", o)
	return s.Session.Fence(ctx, o)
}

// TestNewOwnerRaisesTheTokenBeforeReadingPositions: after a takeover, the new owner's
// first request for each follower carries the new epoch (Session.Fence), before it reads
// positions to reconcile; from then on the broker refuses the old owner's stale orders.
func TestNewOwnerRaisesTheTokenBeforeReadingPositions(t *testing.T) {
	c := newCluster(t, 1, 4)
	ctx := context.Background()
	must(t, c.sim.SetOptions(ctx, broker.ServerOptions{EnforceTokens: true}))
	n1 := c.start("n1", 10, nil)
	c.eventually("n1 owns all", 30*time.Second, c.allOwned("n1"))
	c.masterOpen(1, "EURUSD", broker.Buy, 0.1, 0, 0)
	c.eventually("copied", 30*time.Second, c.converged)
	n1.Halt()

	rb := &tokenRecorder{Broker: c.sim, calls: map[string][]string{}}
	n2, err := actors.Start(ctx, actors.Config{NodeID: "n2", Platform: "sim", Capacity: 10, Lease: shortLease, ReconcileEvery: -1},
		actors.Deps{Pool: c.db.NewPool(t, store.Options{}), Broker: rb, Logger: zerolog.Nop(), Observe: c.signals.Add})
	must(t, err)
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		_ = n2.Stop(sctx)
	})
	c.eventually("n2 owns all", 30*time.Second, c.allOwned("n2"))
	owners := c.owners()
	for _, f := range c.followers {
		login := fmt.Sprintf("f%d", f)
		want := fmt.Sprintf("fence:%d", owners[f].Epoch)
		c.eventually("n2 read "+login+"'s positions", 30*time.Second, func() (bool, string) {
			calls := rb.of(login)
			for _, call := range calls {
				if call == "positions" {
					return true, ""
				}
			}
			return false, strings.Join(calls, ",")
		})
		calls := rb.of(login)
		if len(calls) < 3 || calls[0] != "connect" || calls[1] != want {
			t.Errorf("%s: n2's requests %v; want %s first, before positions", login, calls, want)
		}
	}
	// n2's orders carry its epoch and are bounded by its trust.
	c.masterOpen(1, "GBPUSD", broker.Sell, 0.2, 0, 0)
	c.eventually("n2 copied", 30*time.Second, c.converged)
	for _, f := range c.followers {
		login := fmt.Sprintf("f%d", f)
		opens := 0
		for _, call := range rb.of(login) {
			if strings.HasPrefix(call, "open:") {
				opens++
				if call != fmt.Sprintf("open:%d", owners[f].Epoch) {
					t.Errorf("%s: n2 sent %s, want its epoch %d", login, call, owners[f].Epoch)
				}
			}
		}
		if opens == 0 {
			t.Errorf("%s: n2 sent no open", login)
		}
	}
	rb.mu.Lock()
	bad := append([]string(nil), rb.bad...)
	rb.mu.Unlock()
	if len(bad) > 0 {
		t.Errorf("requests not bounded by the trust: %v", bad)
	}
	// n1's epoch is now below the broker's highest token: a stale order of n1 is fenced.
	s, err := c.sim.Connect(ctx, broker.Credentials{Login: fmt.Sprintf("f%d", c.followers[0])})
	must(t, err)
	defer s.Close()
	_, err = s.Open(ctx, broker.OpenRequest{Order: broker.Order{Token: owners[c.followers[0]].Epoch - 1, Node: "n1"}, Symbol: "EURUSD", Side: broker.Buy, Volume: 0.1})
	if broker.ClassOf(err) != broker.ErrFenced {
		t.Fatalf("a stale order after the takeover got %v, want fenced", err)
	}
}

// TestPositionsSnapshotsAreWrittenThroughTheFence: each owned follower's positions, as
// its owner last saw them, reach the database with the owner's node and epoch, so a
// console on any node can show them; they follow the copies as they change.
func TestPositionsSnapshotsAreWrittenThroughTheFence(t *testing.T) {
	c := newCluster(t, 1, 3)
	ctx := context.Background()
	c.start("n1", 10, nil)
	c.eventually("n1 owns all", 30*time.Second, c.allOwned("n1"))
	p := c.masterOpen(1, "EURUSD", broker.Buy, 0.1, 0, 0)
	c.eventually("copied", 30*time.Second, c.converged)
	snapshots := func(want int) func() (bool, string) {
		return func() (bool, string) {
			owners := c.owners()
			for _, f := range c.followers {
				s, ok, err := store.ReadPositionsSnapshot(ctx, c.db.Pool, f)
				must(t, err)
				if !ok {
					return false, fmt.Sprintf("follower %d: no snapshot", f)
				}
				ps, err := actors.DecodeSnapshot(s.Positions)
				must(t, err)
				if s.Node != "n1" || s.Epoch != owners[f].Epoch || len(ps) != want {
					return false, fmt.Sprintf("follower %d: snapshot by %s at epoch %d with %d positions", f, s.Node, s.Epoch, len(ps))
				}
				if want == 1 && (ps[0].Comment != reconcile.Marker(p.Ticket) || ps[0].Volume != 0.1 || ps[0].Side != "buy") {
					return false, fmt.Sprintf("follower %d: snapshot %+v", f, ps[0])
				}
			}
			return true, ""
		}
	}
	c.eventually("snapshots show the copies", 30*time.Second, snapshots(1))
	must(t, c.sim.MasterClose(ctx, "m1", p.Ticket, 0))
	c.eventually("closed", 30*time.Second, c.converged)
	c.eventually("snapshots show the copies closed", 30*time.Second, snapshots(0))
}
