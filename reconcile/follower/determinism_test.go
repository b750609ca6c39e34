package follower

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/reconcile/protect"
)

// TestReadyIsDeterministic: what a Ready lists never depends on Go's map order: the
// masters a reconcile asks for, each link's ticket map, and which stop-out the status
// names when several scopes are stopped. Maps iterate in a new order every time, so each
// case runs on many fresh Cores.
func TestReadyIsDeterministic(t *testing.T) {
	limits := []byte(`{"max_drawdown":{"percent":10}}`)
	stopped := func(reason protect.Reason) ProtectionState {
		doc, _ := json.Marshal(protect.State{HighWater: 10_000, Stop: &protect.StopOut{At: t0, Reason: reason, Equity: 8_000, Loss: 2_000}})
		return ProtectionState{State: doc}
	}
	var firstStatus string
	for run := range 30 {
		h := newHarness(t, Options{})
		cfg := Config{Version: 1}
		for i, m := range []int64{300, 100, 200} {
			id := int64(i + 1)
			cfg.Links = append(cfg.Links, LinkConfig{ID: id, MasterID: m, Magic: 1000 + id, MasterEnabled: true,
				Settings: []byte(`{"protect":{"max_drawdown":{"percent":20}}}`)})
		}
		var tickets []reconcile.TicketMapEntry
		for mt := int64(509); mt >= 500; mt-- {
			tickets = append(tickets, reconcile.TicketMapEntry{LinkID: 1, MasterTicket: mt, FollowerTicket: 9000 + mt, Volume: 0.1})
		}
		prot := Protection{Limits: limits, States: map[int64]ProtectionState{0: stopped(protect.ReasonDrawdown), 2: stopped(protect.ReasonDrawdown), 3: stopped(protect.ReasonDrawdown)}}
		for scope, st := range prot.States {
			st.Scope = scope
			prot.States[scope] = st
		}
		h.rd = h.c.Start(Status{})
		h.rd = h.c.Loaded(h.at(), Loaded{Config: cfg, Protection: prot, Tickets: tickets, WithTickets: true})
		for _, m := range []int64{300, 100, 200} {
			h.rd = h.c.MasterAttached(h.at(), m, false, 1, 5, ServerClock{})
		}
		h.rd = h.c.TokenDone(h.tick(), nil, false)
		ask := h.wantReconcile(CauseStart)
		if !slices.Equal(ask.Masters, []int64{100, 200, 300}) {
			t.Fatalf("run %d: masters %v, want them sorted", run, ask.Masters)
		}
		tm := ask.Links[0].TicketMap
		if len(tm) != 10 || !slices.IsSortedFunc(tm, func(a, b reconcile.TicketMapEntry) int { return int(a.MasterTicket - b.MasterTicket) }) {
			t.Fatalf("run %d: ticket map %+v, want the 10 entries by master ticket", run, tm)
		}
		st := h.c.Status().StopOut
		if st == "" || (firstStatus != "" && st != firstStatus) {
			t.Fatalf("run %d: stop-out %q, first run %q", run, st, firstStatus)
		}
		firstStatus = st
	}
	if want := "follower stopped out"; len(firstStatus) < len(want) || firstStatus[:len(want)] != want {
		t.Fatalf("stop-out %q: want the follower's own, named first", firstStatus)
	}
}
