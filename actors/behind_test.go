package actors_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile"
)

// staller holds one account's next Open until released, and records the master tickets
// of that account's orders.
type staller struct {
	mu      sync.Mutex
	stall   chan struct{} // the next Open waits for it to close; nil: none
	stalled chan struct{} // closed when an Open is held
	orders  []string
}

func (b *staller) record(kind string, comment string) {
	mt, _ := reconcile.ParseMarker(comment)
	b.mu.Lock()
	b.orders = append(b.orders, fmt.Sprintf("%s %d", kind, mt))
	b.mu.Unlock()
}

func (b *staller) recorded() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.orders)
}

type stallingSession struct {
	broker.Session
	b *staller
}

func (s *stallingSession) Open(ctx context.Context, r broker.OpenRequest) (broker.OrderResult, error) {
	s.b.mu.Lock()
	stall := s.b.stall
	s.b.stall = nil
	s.b.mu.Unlock()
	if stall != nil {
		close(s.b.stalled)
		<-stall
	}
	s.b.record("open", r.Comment)
	return s.Session.Open(ctx, r)
}

func (s *stallingSession) ClosePosition(ctx context.Context, r broker.CloseRequest) (broker.OrderResult, error) {
	s.b.record("close", fmt.Sprintf("close of %d", r.Ticket))
	return s.Session.ClosePosition(ctx, r)
}

// TestBehindFollowerCoalesces: a follower stuck on one order falls behind its master's
// feed; when it comes back it plans the backlog once from the latest master state (issue
// 31 item 3): positions opened and closed meanwhile are never copied, the one still open
// is copied once. A second follower of the same master, not stuck, copies every event:
// when it has copied the last one, the feed has handed every event to the stuck one too.
func TestBehindFollowerCoalesces(t *testing.T) {
	c := newCluster(t, 1, 2)
	stuck, free := c.followers[0], c.followers[1]
	sb := &staller{stall: make(chan struct{}), stalled: make(chan struct{})}
	release := sb.stall
	c.startOn("n1", 10, &loginBroker{Broker: c.sim, login: fmt.Sprintf("f%d", stuck), wrap: func(s broker.Session) broker.Session {
		return &stallingSession{Session: s, b: sb}
	}})
	c.awaitIdle("both followers copying", 0, c.followers)

	ctx := context.Background()
	a := c.masterOpen(1, "EURUSD", broker.Buy, 0.1, 0, 0)
	select {
	case <-sb.stalled:
	case <-time.After(30 * time.Second):
		t.Fatal("the stuck follower's copy of the first open never came")
	}
	var gone []int64
	for range 3 {
		p := c.masterOpen(1, "EURUSD", broker.Sell, 0.1, 0, 0)
		must(t, c.sim.MasterClose(ctx, "m1", p.Ticket, 0))
		gone = append(gone, p.Ticket)
	}
	last := c.masterOpen(1, "GBPUSD", broker.Buy, 0.2, 0, 0)
	c.eventually("the free follower copied the last open", 30*time.Second, func() (bool, string) {
		ps, err := c.sim.AccountPositions(ctx, fmt.Sprintf("f%d", free))
		must(t, err)
		for _, p := range ps {
			if mt, _ := reconcile.ParseMarker(p.Comment); mt == last.Ticket {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d positions", len(ps))
	})
	close(release)
	c.eventually("both followers converged", 30*time.Second, c.converged)
	want := []string{fmt.Sprintf("open %d", a.Ticket), fmt.Sprintf("open %d", last.Ticket)}
	if got := sb.recorded(); !slices.Equal(got, want) {
		t.Fatalf("the stuck follower sent %v, want %v (positions %v opened and closed while it was behind)", got, want, gone)
	}
}
