package actors

import (
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/snapcopier/copier/leasekeeper"
)

// stepClock is a manually advanced gate clock.
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

func (c *stepClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestOrderDeadlineIsTheTrustEndWhateverThePause: the process pauses right after the gate
// check (GC, VM stall, suspend: both clocks move on); the order built afterwards must end
// where the trust ends, not a pause later, on the wire and in its context.
func TestOrderDeadlineIsTheTrustEndWhateverThePause(t *testing.T) {
	gateClock := &stepClock{now: time.Unix(5_000, 0)}
	wallMu := sync.Mutex{}
	wall := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := func() time.Time { wallMu.Lock(); defer wallMu.Unlock(); return wall }
	cfg := leasekeeper.DefaultConfig()
	g := leasekeeper.NewEpochGate(gateClock, 7)
	g.Confirm(leasekeeper.Lease{Started: gateClock.Now(), Config: cfg})
	trustEnd := wall.Add(cfg.Trust()) // the gate's trust end, on the wall clock
	a := &accountActor{e: &engine{cfg: Config{NodeID: "n1", OrderTimeout: time.Hour}, wall: now}, id: 1, epoch: 7, gate: g}

	tk, open := a.gate.Check()
	if !open {
		t.Fatal("gate closed right after its confirmation")
	}
	const pause = 20 * time.Second
	gateClock.advance(pause)
	wallMu.Lock()
	wall = wall.Add(pause)
	wallMu.Unlock()

	ctx, o := a.orderFor(tk, uuid.New(), a.e.now())
	defer ctx.Cancel()
	realAfter := time.Now()
	if !o.Deadline.Equal(trustEnd) {
		t.Fatalf("after a %v pause the order's deadline is %v, want the trust end %v (%v later)", pause, o.Deadline, trustEnd, o.Deadline.Sub(trustEnd))
	}
	if o.Token != 7 {
		t.Fatalf("token %d, want the ticket's epoch 7", o.Token)
	}
	dl, ok := ctx.Deadline()
	if left := cfg.Trust() - pause; !ok || dl.Sub(realAfter) > left {
		t.Fatalf("the order's context may run %v after the pause, want at most the %v of trust left", dl.Sub(realAfter), left)
	}
}
