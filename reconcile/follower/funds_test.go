package follower

import (
	"testing"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile"
)

// TestRatioSizingFollowsTheLatestFunds: a balance-ratio link sizes each copy on the
// latest balances the Core has, not on the last reconcile's reading. The follower's come
// with its orders' results and the equity watcher's readings, the master's with its feed
// events; figures a server does not say (Known false) change nothing.
func TestRatioSizingFollowsTheLatestFunds(t *testing.T) {
	h := newHarness(t, Options{})
	h.copying(config(1, `{"sizing":{"mode":"balance_ratio","multiplier":1,"align_contract_size":false}}`),
		state("f", broker.Hedging), state("m", broker.Hedging)) // both 10,000

	copyVolume := func(what string, ticket int64, funds broker.Funds, want float64) {
		t.Helper()
		ev := &broker.Event{Kind: broker.Opened, Epoch: 1, Seq: ticket - 394, Position: h.mpos(ticket), ServerTime: h.now, Funds: funds}
		h.rd = h.c.Event(h.at(), 100, ev, h.now)
		if got := h.wantSend(reconcile.Open).Volume; got != want {
			t.Fatalf("%s: copy of 1 lot is %v lots, want %v", what, got, want)
		}
	}
	fill := func(ticket int64, funds broker.Funds) {
		a := h.rd.Send.Action
		h.rd = h.c.OrderDone(h.at(), OrderOutcome{Result: broker.OrderResult{Ticket: ticket, Volume: a.Volume, Price: 1.1001, ServerTime: h.now, Funds: funds}, SentAt: h.now})
	}

	copyVolume("balances as the reconcile read them", 400, broker.Funds{}, 1)
	fill(9001, broker.Funds{Known: true, Balance: 5_000, Equity: 4_900}) // say a close elsewhere halved it
	if st := h.c.Status(); st.Balance != 5_000 || st.Equity != 4_900 {
		t.Fatalf("status balance %v equity %v after a result with funds, want 5000 and 4900", st.Balance, st.Equity)
	}
	copyVolume("the follower's balance from its last result", 401, broker.Funds{}, 0.5)
	fill(9002, broker.Funds{}) // unknown: kept
	copyVolume("after a result without funds", 402, broker.Funds{Known: true, Balance: 2_500, Equity: 2_500}, 2)
	fill(9003, broker.Funds{})

	h.rd = h.c.EquityRead(h.at(), broker.AccountInfo{Login: "f", Balance: 20_000, Equity: 20_000, Mode: broker.Hedging})
	copyVolume("the watcher's reading and the master's event", 403, broker.Funds{}, 8)
}
