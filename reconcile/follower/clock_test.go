package follower

import (
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile"
)

// TestServerClockKeepsTheLeastDelayedSample: the estimate is the largest sample (server
// time minus receipt) of the current and the previous window; delayed events do not move
// it, a sample ages out after two windows, and an event without a server time is no sample.
func TestServerClockKeepsTheLeastDelayedSample(t *testing.T) {
	var c ServerClock
	now := t0
	sample := func(offset time.Duration) {
		now = now.Add(time.Second)
		c.Observe(now.Add(offset), now, now)
	}
	if c.Offset() != 0 {
		t.Fatalf("offset %v before any sample", c.Offset())
	}
	sample(-90 * time.Second) // the server 90 s behind, the event on time
	sample(-95 * time.Second) // a 5 s delayed event
	c.Observe(time.Time{}, now, now)
	if got := c.Offset(); got != -90*time.Second {
		t.Fatalf("offset %v, want -90s (the least delayed event's)", got)
	}
	now = now.Add(clockWindow)
	sample(-93 * time.Second) // a new window: the previous one's sample still counts
	if got := c.Offset(); got != -90*time.Second {
		t.Fatalf("offset %v one window on, want -90s", got)
	}
	now = now.Add(clockWindow)
	sample(-94 * time.Second)
	if got := c.Offset(); got != -93*time.Second {
		t.Fatalf("offset %v two windows on, want -93s (the -90s sample aged out)", got)
	}
	now = now.Add(3 * clockWindow) // a quiet master: the samples before are too old to count
	sample(-130 * time.Second)
	if got := c.Offset(); got != -130*time.Second {
		t.Fatalf("offset %v after three quiet windows, want -130s (the new sample alone)", got)
	}
}

// TestServerClockDistrustsHoursOfOffset: server times hours off (a terminal sending local
// times as UTC) are not compensated: the estimate is 0, so old positions are skipped as too
// old rather than copied; an offset just within maxClockOffset is kept.
func TestServerClockDistrustsHoursOfOffset(t *testing.T) {
	for _, tc := range []struct {
		sample, want time.Duration
	}{
		{-2 * time.Hour, 0}, {3 * time.Hour, 0}, {-maxClockOffset, -maxClockOffset}, {maxClockOffset + time.Second, 0},
	} {
		var c ServerClock
		c.Observe(t0.Add(tc.sample), t0, t0)
		if got := c.Offset(); got != tc.want {
			t.Errorf("a sample of %v gives the offset %v, want %v", tc.sample, got, tc.want)
		}
	}
}

// TestCopiesAreDatedByTheMastersServerClock: the master's trade server runs 90 s behind
// the node. A position it opened reaches the node at once and is copied: its OpenTime is
// 90 s before the node's clock, not 90 s ago (before, every copy was too old for the
// default 60 s window). An event delayed 70 s after that is too old: a delay is not an
// offset. A reconcile's plan is told the offset too.
func TestCopiesAreDatedByTheMastersServerClock(t *testing.T) {
	h := newHarness(t, Options{})
	h.copying(config(1, ""), state("f", broker.Hedging), state("m", broker.Hedging))
	behind := -90 * time.Second
	event := func(seq, ticket int64, delay time.Duration) {
		serverNow := h.tick().Add(behind - delay) // the server's clock when it sent the event
		p := h.mpos(ticket)
		p.OpenTime = serverNow
		ev := &broker.Event{Kind: broker.Opened, Epoch: 1, Seq: seq, Position: p, ServerTime: serverNow}
		h.rd = h.c.Event(h.at(), 100, ev, h.now)
	}
	event(6, 400, 0)
	h.wantSend(reconcile.Open)
	h.filled(9001)

	event(7, 401, 70*time.Second)
	h.wantNothing("a copy 70 s late (too old)")
	event(9, 402, 0) // a gap (seq 8 missed): a reconcile
	ask := h.wantReconcile(CauseGap)
	// The harness's clock moves a millisecond between an event's sending and its receipt.
	if len(ask.Links) != 1 || ask.Links[0].MasterClock > behind || ask.Links[0].MasterClock < behind-10*time.Millisecond {
		t.Fatalf("reconcile asked with the master's clock at %v, want %v", ask.Links[0].MasterClock, behind)
	}
}

// TestAFreshAccountTakesTheFeedsClock: an account that has no sample of its master
// server's clock yet takes the feed's estimate when the feed attaches, so its first
// reconcile (a takeover's) dates the master's positions by it; one with samples of its
// own keeps them when the feed attaches again.
func TestAFreshAccountTakesTheFeedsClock(t *testing.T) {
	h := newHarness(t, Options{})
	var feed ServerClock
	feed.Observe(t0.Add(-90*time.Second), t0, t0)
	h.rd = h.c.Start(Status{})
	h.rd = h.c.Loaded(h.at(), Loaded{Config: config(1, ""), WithTickets: true})
	h.rd = h.c.MasterAttached(h.at(), 100, false, 1, 5, feed)
	h.rd = h.c.TokenDone(h.tick(), nil, false)
	if ask := h.wantReconcile(CauseStart); ask.Links[0].MasterClock != -90*time.Second {
		t.Fatalf("the first reconcile dates the master's positions with the clock %v, want -1m30s", ask.Links[0].MasterClock)
	}
	h.answer(state("f", broker.Hedging), state("m", broker.Hedging), nil)

	// Its own samples: the server 30 s behind now.
	server := h.tick().Add(-30 * time.Second)
	p := h.mpos(400)
	p.OpenTime = server
	h.rd = h.c.Event(h.at(), 100, &broker.Event{Kind: broker.Opened, Epoch: 1, Seq: 6, Position: p, ServerTime: server}, h.now)
	h.wantSend(reconcile.Open)
	h.filled(9001)
	h.rd = h.c.MasterAttached(h.at(), 100, true, 0, 0, feed) // the feed restarted
	ask := h.wantReconcile(CauseRestart)
	if c := ask.Links[0].MasterClock; c < -31*time.Second || c > -29*time.Second {
		t.Fatalf("after samples of its own the account dates by %v, want about -30s (not the feed's -1m30s)", c)
	}
}
