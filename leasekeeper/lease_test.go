package leasekeeper

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// fakeClock is a manually advanced clock, safe for concurrent reads.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"defaults", DefaultConfig(), true},
		{"short", Config{Lease: 3 * time.Second, Fence: time.Second, Interval: 300 * time.Millisecond}, true},
		{"zero lease", Config{Lease: 0, Fence: time.Second, Interval: time.Second}, false},
		{"zero fence", Config{Lease: time.Minute, Fence: 0, Interval: time.Second}, false},
		{"fence equals lease", Config{Lease: time.Minute, Fence: time.Minute, Interval: time.Second}, false},
		{"fence above lease", Config{Lease: time.Minute, Fence: 2 * time.Minute, Interval: time.Second}, false},
		{"zero interval", Config{Lease: time.Minute, Fence: 15 * time.Second, Interval: 0}, false},
		{"interval equals trust", Config{Lease: time.Minute, Fence: 15 * time.Second, Interval: 45 * time.Second}, false},
		{"interval just inside", Config{Lease: time.Minute, Fence: 15 * time.Second, Interval: 44 * time.Second}, true},
	}
	for _, c := range cases {
		err := c.cfg.Validate()
		if (err == nil) != c.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", c.name, err, c.ok)
		}
		if err != nil && !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: error %v does not wrap ErrBadConfig", c.name, err)
		}
	}
}

func TestTrustIsMeasuredFromBeforeTheQuery(t *testing.T) {
	clk := newFakeClock()
	cfg := DefaultConfig()
	g := NewGate(clk)
	if g.HoldsLease() {
		t.Fatal("a new gate must be closed")
	}
	started := clk.Now() // read before the cycle
	clk.Advance(2 * time.Second)
	// The cycle commits 2 s later; trust still runs from started.
	l := Lease{Started: started, Config: cfg}
	g.Confirm(l)
	want := started.Add(45 * time.Second)
	if got, ok := g.TrustedUntil(); !ok || !got.Equal(want) {
		t.Fatalf("TrustedUntil = %v, %v; want %v", got, ok, want)
	}
	if rem := g.Remaining(); rem != 43*time.Second {
		t.Fatalf("Remaining = %v, want 43s", rem)
	}
}

func TestSlowSuccessfulCycleDoesNotExtendTrust(t *testing.T) {
	clk := newFakeClock()
	cfg := DefaultConfig()
	g := NewGate(clk)
	started := clk.Now()
	clk.Advance(50 * time.Second) // the cycle took longer than the trust it grants
	g.Confirm(Lease{Started: started, Config: cfg})
	if g.HoldsLease() {
		t.Fatal("a cycle that committed after its trusted window must not open the gate")
	}
}

func TestGateClosesExactlyAtTrustedUntil(t *testing.T) {
	clk := newFakeClock()
	cfg := Config{Lease: 3 * time.Second, Fence: time.Second, Interval: 300 * time.Millisecond}
	g := NewGate(clk)
	g.Confirm(Lease{Started: clk.Now(), Config: cfg})
	clk.Advance(2*time.Second - time.Nanosecond)
	if !g.HoldsLease() {
		t.Fatal("gate must be open 1 ns before trustedUntil")
	}
	clk.Advance(time.Nanosecond)
	if g.HoldsLease() {
		t.Fatal("gate must be closed at trustedUntil")
	}
}

func TestConfirmNeverMovesBackwards(t *testing.T) {
	clk := newFakeClock()
	cfg := DefaultConfig()
	g := NewGate(clk)
	old := clk.Now()
	clk.Advance(10 * time.Second)
	newer := clk.Now()
	g.Confirm(Lease{Started: newer, Config: cfg})
	g.Confirm(Lease{Started: old, Config: cfg}) // a late result of an older cycle
	if got, _ := g.TrustedUntil(); !got.Equal(newer.Add(45 * time.Second)) {
		t.Fatalf("TrustedUntil moved backwards to %v", got)
	}
	g.Revoke()
	if g.HoldsLease() {
		t.Fatal("revoked gate must be closed")
	}
	if _, ok := g.TrustedUntil(); ok {
		t.Fatal("revoked gate has no deadline")
	}
}

func TestGateWithSystemClock(t *testing.T) {
	g := NewGate(nil)
	g.Confirm(Lease{Started: time.Now(), Config: DefaultConfig()})
	if !g.HoldsLease() {
		t.Fatal("freshly confirmed gate must be open")
	}
	g.Confirm(Lease{Started: time.Now().Add(-time.Hour), Config: DefaultConfig()})
	if !g.HoldsLease() {
		t.Fatal("an older confirmation must not close the gate")
	}
}

func TestGateConcurrentConfirmAndRead(t *testing.T) {
	clk := newFakeClock()
	g := NewGate(clk)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 1000; j++ {
				g.Confirm(Lease{Started: clk.Now(), Config: DefaultConfig()})
				_ = g.HoldsLease()
			}
		}()
	}
	wg.Wait()
	if !g.HoldsLease() {
		t.Fatal("gate must be open after confirmations")
	}
}

func BenchmarkGate(b *testing.B) {
	g := NewGate(SystemClock{})
	g.Confirm(Lease{Started: time.Now(), Config: DefaultConfig()})
	b.ReportAllocs()
	open := 0
	for b.Loop() {
		if g.HoldsLease() {
			open++
		}
	}
	if open == 0 {
		b.Fatal("gate closed during benchmark")
	}
}

// BenchmarkMonotonicRead is the floor under BenchmarkGate: one read of the monotonic
// clock, which the gate cannot avoid.
func BenchmarkMonotonicRead(b *testing.B) {
	base := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		_ = time.Since(base)
	}
}
