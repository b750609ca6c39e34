package follower

import (
	"testing"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile"
)

// TestSkipsAreJournalledOncePerPositionAndReason: a master position a link does not copy
// is journalled (result "skipped", the reason and its detail) and noted once; the plans
// that meet it again (a change of the position, every reconcile) journal nothing more;
// a reconcile whose plan no longer skips it, or the position's close, ends it, so a later
// skip is journalled again; quote_stale, which the engine answers at once, is not. A link
// no longer loaded takes its skips with it.
func TestSkipsAreJournalledOncePerPositionAndReason(t *testing.T) {
	h := newHarness(t, Options{})
	h.copying(config(1, `{"filters": {"exclude_symbols": ["EURUSD"]}}`), state("f", broker.Hedging), state("m", broker.Hedging))
	skipped := func(what string, tickets ...int64) {
		t.Helper()
		var got []int64
		for _, j := range h.rd.Journal {
			if j.Result != "skipped" || j.Skip != reconcile.SkipFilteredSymbol || j.Link != 1 || j.SkipDetail == "" {
				t.Fatalf("%s: journal entry %+v, want a filtered_symbol skip of link 1 with its detail", what, j)
			}
			got = append(got, j.MasterTicket)
		}
		notes := 0
		for _, n := range h.rd.Notes {
			if n.Kind == NoteSkipped {
				notes++
			}
		}
		if len(got) != len(tickets) || notes != len(tickets) {
			t.Fatalf("%s: journalled skips of %v and %d notes, want %v", what, got, notes, tickets)
		}
		for i := range got {
			if got[i] != tickets[i] {
				t.Fatalf("%s: journalled skips of %v, want %v", what, got, tickets)
			}
		}
	}

	p := h.mpos(501)
	h.event(broker.Opened, 1, 6, p)
	h.wantNothing("an excluded symbol")
	skipped("the open", 501)
	if a := h.rd.Journal[0].Action(); a == "" || a[:len("not copied (filtered_symbol)")] != "not copied (filtered_symbol)" {
		t.Fatalf("the entry reads %q", a)
	}
	p.SL = 1.09
	h.event(broker.Modified, 1, 7, p)
	skipped("its change")

	skips := func(tickets ...int64) map[int64]reconcile.Result {
		var r reconcile.Result
		for _, tk := range tickets {
			r.Skipped = append(r.Skipped, reconcile.Skip{MasterTicket: tk, Symbol: "EURUSD", Reason: reconcile.SkipFilteredSymbol, Detail: "excluded"})
		}
		r.Skipped = append(r.Skipped, reconcile.Skip{MasterTicket: 509, Symbol: "GER40", Reason: reconcile.SkipQuoteStale, Detail: "read again"})
		return map[int64]reconcile.Result{1: r}
	}
	seq := int64(7)
	reconcileWith := func(tickets ...int64) {
		t.Helper()
		seq += 2 // a gap: the next is a reconcile
		h.event(broker.Opened, 1, seq, h.mpos(900+seq))
		h.wantReconcile(CauseGap)
		h.answer(state("f", broker.Hedging), state("m", broker.Hedging), skips(tickets...))
	}
	reconcileWith(501, 502)
	skipped("a reconcile that meets 501 again and 502 first", 502)
	reconcileWith(502)
	skipped("a reconcile without 501")
	reconcileWith(501, 502)
	skipped("501 skipped again after it was not", 501)

	seq++
	h.event(broker.Closed, 1, seq, h.mpos(502))
	skipped("502 closed")
	reconcileWith(501, 502) // a new position 502 would be journalled again
	skipped("502 after its close", 502)

	// The link is removed (another takes its place): its skips go with it.
	if len(h.c.skips) != 2 {
		t.Fatalf("%d skips held before the reload, want 2", len(h.c.skips))
	}
	h.rd = h.c.Loaded(h.at(), Loaded{Config: Config{Version: 2, Links: []LinkConfig{{ID: 2, MasterID: 100, Magic: 1002, Settings: []byte(`{}`), MasterEnabled: true}}}})
	if len(h.c.skips) != 0 {
		t.Fatalf("skips %v held for a link no longer loaded", h.c.skips)
	}
}
