package actors

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/store"
)

// TestFeedLogsTheMasterServersClockOnce: the feed logs the master server's clock when its
// state changes (off by more than 2 s and compensated, beyond 10 minutes and not, back in
// step), once per change, not once per event.
func TestFeedLogsTheMasterServersClockOnce(t *testing.T) {
	var out bytes.Buffer
	f := &masterFeed{e: &engine{log: zerolog.New(&out)}, master: store.Account{ID: 7}}
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	event := func(offset time.Duration) {
		now = now.Add(time.Second)
		f.observeClock(now.Add(offset), now)
	}
	lines := func() []string { return strings.Split(strings.TrimSpace(out.String()), "\n") }

	event(-time.Second) // in step: nothing to say
	if out.Len() != 0 {
		t.Fatalf("logged %q for a clock 1 s off", out.String())
	}
	event(0)
	event(-3 * time.Second) // the least delayed sample (0) still rules
	if out.Len() != 0 {
		t.Fatalf("logged %q for a delayed event", out.String())
	}
	now = now.Add(3 * time.Hour) // both windows past: only new samples count
	event(-90 * time.Second)
	event(-90 * time.Second)
	if l := lines(); len(l) != 1 || !strings.Contains(l[0], "off the node's") || !strings.Contains(l[0], `"master":7`) {
		t.Fatalf("after a server 90 s behind, logged %q: want one warning", l)
	}
	now = now.Add(3 * time.Hour)
	event(2 * time.Hour)
	if l := lines(); len(l) != 2 || !strings.Contains(l[1], "not compensated") {
		t.Fatalf("after times 2 h off, logged %q: want a second warning", l)
	}
	now = now.Add(3 * time.Hour)
	event(0)
	if l := lines(); len(l) != 3 || !strings.Contains(l[2], "back in step") {
		t.Fatalf("after the clock came back, logged %q", l)
	}
}

// TestSubscribersKeepTheirOrderAndOneEntryEach: the feed's subscribers fan out in the
// order they subscribed; a second subscribe adds nothing; an unsubscribe drops exactly
// that account (the last one takes its place) and an unknown one changes nothing.
func TestSubscribersKeepTheirOrderAndOneEntryEach(t *testing.T) {
	s := subscribers{at: map[string]int{}}
	pid := func(id string) *actor.PID { return actor.NewPID("local", id) }
	ids := func() string {
		var b strings.Builder
		for i, p := range s.list {
			if s.at[p.Id] != i {
				t.Fatalf("%s is at %d, indexed at %d", p.Id, i, s.at[p.Id])
			}
			b.WriteString(p.Id)
		}
		if len(s.at) != len(s.list) {
			t.Fatalf("%d indexed, %d listed", len(s.at), len(s.list))
		}
		return b.String()
	}
	for _, id := range []string{"a", "b", "c", "d", "b"} {
		s.add(pid(id))
	}
	if got := ids(); got != "abcd" {
		t.Fatalf("after subscribing a b c d b: %q, want abcd", got)
	}
	s.remove(pid("b"))
	if got := ids(); got != "adc" {
		t.Fatalf("after b left: %q, want adc", got)
	}
	s.remove(pid("x"))
	s.remove(pid("c"))
	if got := ids(); got != "ad" {
		t.Fatalf("after x and c left: %q, want ad", got)
	}
	s.remove(pid("a"))
	s.remove(pid("d"))
	s.add(pid("e"))
	if got := ids(); got != "e" {
		t.Fatalf("after a and d left and e came: %q, want e", got)
	}
}
