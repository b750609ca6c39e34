package fix

import (
	"errors"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
)

// The book nets like a netting account: an opposite fill reduces the named position first,
// then the oldest; what is left over grows a position of its side, else opens a new one.
func TestApplyFill(t *testing.T) {
	t0 := time.Unix(0, 0)
	a := bp(broker.Position{Ticket: 1, Symbol: "EURUSD", Side: broker.Buy, Volume: 0.3, OpenTime: t0})
	b := bp(broker.Position{Ticket: 2, Symbol: "EURUSD", Side: broker.Buy, Volume: 0.2, OpenTime: t0.Add(time.Second)})
	g := bp(broker.Position{Ticket: 3, Symbol: "GBPUSD", Side: broker.Sell, Volume: 1})
	held := []BookPosition{a, b, g}

	// An open on a symbol without positions opens.
	got := applyFill(held, "USDJPY", broker.Buy, 0.1, 0, bp(broker.Position{Ticket: 9, Comment: "mc"}))
	if len(got) != 1 || got[0].Ticket != 9 || got[0].Volume != 0.1 || got[0].Side != broker.Buy || got[0].Symbol != "USDJPY" || got[0].Comment != "mc" {
		t.Fatalf("open: %+v", got)
	}
	// A partial close of the named (younger) position.
	got = applyFill(held, "EURUSD", broker.Sell, 0.1, 2, bp(broker.Position{}))
	if len(got) != 1 || got[0].Ticket != 2 || !nearly(got[0].Volume, 0.1) {
		t.Fatalf("partial close: %+v", got)
	}
	// A full close.
	got = applyFill(held, "EURUSD", broker.Sell, 0.3, 1, bp(broker.Position{}))
	if len(got) != 1 || got[0].Ticket != 1 || got[0].Volume != 0 {
		t.Fatalf("close: %+v", got)
	}
	// An opposite open nets: the oldest first, then the next, the rest opens a sell.
	got = applyFill(held, "EURUSD", broker.Sell, 0.7, 0, bp(broker.Position{Ticket: 9}))
	if len(got) != 3 || got[0].Ticket != 1 || got[0].Volume != 0 || got[1].Ticket != 2 || got[1].Volume != 0 ||
		got[2].Ticket != 9 || got[2].Side != broker.Sell || !nearly(got[2].Volume, 0.2) {
		t.Fatalf("netting open: %+v", got)
	}
	// A same-side fill grows the oldest position of the side (a netting venue merges
	// them): its ticket, magic and comment stay, the open price is weighted.
	a.OpenPrice, a.Magic, a.Comment, a.SLOrder = 1.1, 7, "mc1", "o1.sl"
	got = applyFill([]BookPosition{a, g}, "EURUSD", broker.Buy, 0.1, 0, bp(broker.Position{Ticket: 9, OpenPrice: 1.5, Comment: "mc2"}))
	if len(got) != 1 || got[0].Ticket != 1 || !nearly(got[0].Volume, 0.4) || got[0].Magic != 7 || got[0].Comment != "mc1" || !nearly(got[0].OpenPrice, 1.2) || got[0].SLOrder != "o1.sl" {
		t.Fatalf("same-side open: %+v, want ticket 1 grown to 0.4 at 1.2", got)
	}
	// Other symbols are untouched.
	for _, p := range got {
		if p.Symbol == "GBPUSD" {
			t.Fatalf("touched another symbol: %+v", got)
		}
	}
}

// MemBook keeps what is put and forgets a position put with no volume.
func TestMemBook(t *testing.T) {
	ctx := t.Context()
	b := NewMemBook()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.Put(ctx, "a", broker.Order{}, bp(broker.Position{Ticket: 2, Volume: 1})))
	must(b.Put(ctx, "a", broker.Order{}, bp(broker.Position{Ticket: 1, Volume: 1})))
	must(b.Put(ctx, "b", broker.Order{}, bp(broker.Position{Ticket: 3, Volume: 1})))
	ps, err := b.Positions(ctx, "a")
	must(err)
	if len(ps) != 2 || ps[0].Ticket != 1 || ps[1].Ticket != 2 {
		t.Fatalf("a: %+v", ps)
	}
	must(b.Put(ctx, "a", broker.Order{}, bp(broker.Position{Ticket: 1})))
	if ps, _ := b.Positions(ctx, "a"); len(ps) != 1 || ps[0].Ticket != 2 {
		t.Fatalf("after a close: %+v", ps)
	}
	// The fence: after a write at token 5 one at 4 (an owner that lost the account) is
	// refused and changes nothing.
	must(b.Put(ctx, "a", broker.Order{Token: 5}, bp(broker.Position{Ticket: 4, Volume: 1})))
	if err := b.Put(ctx, "a", broker.Order{Token: 4}, bp(broker.Position{Ticket: 4})); !errors.Is(err, ErrStaleBookWrite) {
		t.Fatalf("stale write: %v, want ErrStaleBookWrite", err)
	}
	if ps, _ := b.Positions(ctx, "a"); len(ps) != 2 {
		t.Fatalf("after a stale write: %+v", ps)
	}
	if bookTicket("x") != bookTicket("x") || bookTicket("x") == bookTicket("y") || bookTicket("x") >= 1<<53 {
		t.Fatal("tickets are not stable, distinct and 53-bit")
	}
}

func nearly(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func bp(p broker.Position) BookPosition { return BookPosition{Position: p} }
