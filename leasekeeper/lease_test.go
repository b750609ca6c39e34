package leasekeeper

import (
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fakeClock is a manually advanced clock, safe for concurrent reads.
type fakeClock struct {
	mu   sync.Mutex
	now  time.Time
	hook atomic.Pointer[func()] // called on every reading, outside the lock
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	if h := c.hook.Load(); h != nil {
		(*h)()
	}
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
	clk := SystemClock{}
	g.Confirm(Lease{Started: clk.Now(), Config: DefaultConfig()})
	if !g.HoldsLease() {
		t.Fatal("freshly confirmed gate must be open")
	}
	g.Confirm(Lease{Started: clk.Now().Add(-time.Hour), Config: DefaultConfig()})
	if !g.HoldsLease() {
		t.Fatal("an older confirmation must not close the gate")
	}
}

// A gate on the real clock follows every change of the deadline: confirmations (fresh,
// already over, older), Revoke and Fence.
func TestSystemClockGateFollowsTheDeadline(t *testing.T) {
	clk := SystemClock{}
	cfg := DefaultConfig()
	g := NewGate(clk)
	if g.HoldsLease() {
		t.Fatal("a new gate is closed")
	}
	g.Confirm(Lease{Started: clk.Now().Add(-cfg.Trust() - time.Second), Config: cfg})
	if g.HoldsLease() {
		t.Fatal("a confirmation whose trust is over leaves the gate closed")
	}
	g.Confirm(Lease{Started: clk.Now(), Config: cfg})
	if !g.HoldsLease() {
		t.Fatal("freshly confirmed gate must be open")
	}
	g.Revoke()
	if g.HoldsLease() {
		t.Fatal("a revoked gate is closed")
	}
	g.Confirm(Lease{Started: clk.Now(), Config: cfg})
	if !g.HoldsLease() {
		t.Fatal("a confirmation after Revoke reopens the gate")
	}
	g.Fence()
	if g.HoldsLease() {
		t.Fatal("a fenced gate is closed")
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
	g.Confirm(Lease{Started: SystemClock{}.Now(), Config: DefaultConfig()})
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

// BenchmarkGateCheck is the check an order makes: HoldsLease plus the ticket (epoch and
// trust left) its deadline and token are derived from.
func BenchmarkGateCheck(b *testing.B) {
	g := NewEpochGate(SystemClock{}, 7)
	g.Confirm(Lease{Started: SystemClock{}.Now(), Config: DefaultConfig()})
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := g.Check(); !ok {
			b.Fatal("gate closed during benchmark")
		}
	}
}

// BenchmarkBootClockRead is the floor under BenchmarkGate: one read of CLOCK_BOOTTIME.
func BenchmarkBootClockRead(b *testing.B) {
	c := SystemClock{}
	base := c.Now()
	b.ReportAllocs()
	for b.Loop() {
		_ = c.Since(base)
	}
}

// BenchmarkMonotonicRead is Go's monotonic clock (which stops during a suspend), for
// comparison with BenchmarkBootClockRead.
func BenchmarkMonotonicRead(b *testing.B) {
	base := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		_ = time.Since(base)
	}
}

// jumpClock is a clock whose readings jump forward as a resume from suspend does.
type jumpClock struct{ fakeClock }

func TestGateClosesWhenTheClockJumpsOverASuspend(t *testing.T) {
	clk := &jumpClock{fakeClock: *newFakeClock()}
	g := NewEpochGate(clk, 3)
	g.Confirm(Lease{Started: clk.Now(), Config: DefaultConfig()})
	if _, ok := g.Check(); !ok {
		t.Fatal("confirmed gate must be open")
	}
	clk.Advance(10 * time.Minute) // the machine slept; its boot clock kept counting
	if g.HoldsLease() {
		t.Fatal("gate still open after a suspend longer than the trust")
	}
	if _, ok := g.Check(); ok {
		t.Fatal("Check grants a ticket after a suspend longer than the trust")
	}
}

// TestSystemClockCountsSuspendedTime: the gate's clock is CLOCK_BOOTTIME, which counts time
// the machine spent suspended (Go's monotonic clock, CLOCK_MONOTONIC, does not).
func TestSystemClockCountsSuspendedTime(t *testing.T) {
	var before, after unix.Timespec
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(CheckSystemClock())
	must(unix.ClockGettime(unix.CLOCK_BOOTTIME, &before))
	got := SystemClock{}.Now().UnixNano()
	must(unix.ClockGettime(unix.CLOCK_BOOTTIME, &after))
	if got < before.Nano() || got > after.Nano() {
		t.Fatalf("SystemClock read %d, not between two CLOCK_BOOTTIME readings %d and %d", got, before.Nano(), after.Nano())
	}
	if d := (SystemClock{}).Since(time.Unix(0, before.Nano())); d < 0 || d > time.Duration(math.MaxInt64/2) {
		t.Fatalf("Since on the boot clock = %v", d)
	}
}

func TestGateTicketCarriesEpochAndTrustTogether(t *testing.T) {
	clk := newFakeClock()
	g := NewEpochGate(clk, 9)
	if _, ok := g.Check(); ok {
		t.Fatal("a new gate grants no ticket")
	}
	g.Confirm(Lease{Started: clk.Now(), Config: DefaultConfig()})
	clk.Advance(5 * time.Second)
	trustEnd := clk.Now().Add(40 * time.Second)
	tk, ok := g.Check()
	if !ok || tk.Epoch != 9 || !tk.Until.Equal(trustEnd) || tk.Left() != 40*time.Second {
		t.Fatalf("ticket %+v, %v; want epoch 9, until %v, 40s left", tk, ok, trustEnd)
	}
	// A pause after the check (GC, VM stall, suspend) shortens what is left: the ticket's
	// end stays the trust's end.
	clk.Advance(7 * time.Second)
	if !tk.Until.Equal(trustEnd) || tk.Left() != 33*time.Second {
		t.Fatalf("after a 7 s pause the ticket ends at %v with %v left; want %v, 33s", tk.Until, tk.Left(), trustEnd)
	}
	g.Fence()
	g.Confirm(Lease{Started: clk.Now(), Config: DefaultConfig()})
	g.Revoke()
	g.Confirm(Lease{Started: clk.Now(), Config: DefaultConfig()})
	if _, ok := g.Check(); ok || g.HoldsLease() || !g.Fenced() {
		t.Fatal("a fenced gate reopened")
	}
}

func TestConfigValidateClockSkew(t *testing.T) {
	c := Config{Lease: 6 * time.Second, Fence: 2 * time.Second, Interval: 300 * time.Millisecond, ClockSkew: 1995 * time.Millisecond}
	if err := c.Validate(); err == nil {
		t.Fatal("fence 2 s with skew 1.995 s and 6 ms of drift must be refused")
	}
	c.ClockSkew = time.Second
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.ClockSkew = -time.Second
	if err := c.Validate(); err == nil {
		t.Fatal("a negative skew must be refused")
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}
