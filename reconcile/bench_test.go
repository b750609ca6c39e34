package reconcile

import (
	"fmt"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
)

// BenchmarkPlan plans a follower with 200 copies of 200 master positions, 20 of them
// needing an action.
func BenchmarkPlan(b *testing.B) {
	for _, mode := range []broker.AccountMode{broker.Hedging, broker.Netting} {
		b.Run(mode.String(), func(b *testing.B) {
			in := testInput(mode)
			syms := make([]broker.SymbolSpec, 0, 20)
			for i := range 20 {
				syms = append(syms, fx(fmt.Sprintf("SYM%02d", i)))
			}
			in.Master.Symbols, in.Follower.Symbols = specs(syms...), specs(syms...)
			for i := range 200 {
				t := int64(1000 + i)
				sym := fmt.Sprintf("SYM%02d", i%20)
				in.Master.Positions = append(in.Master.Positions, mpos(t, sym, broker.Buy, 0.5, time.Duration(i)*time.Second))
				if mode == broker.Hedging && i%10 != 0 {
					in.Follower.Positions = append(in.Follower.Positions, copyOf(5000+t, t, sym, broker.Buy, 0.5))
					in.TicketMap = append(in.TicketMap, TicketMapEntry{LinkID: 1, MasterTicket: t, FollowerTicket: 5000 + t, Volume: 1})
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				Plan(in)
			}
		})
	}
}

// BenchmarkPlanEvent is the fan-out's plan: one master event on a hedging follower, the
// open of a new master position (no copy yet) and the close of one with its copy.
func BenchmarkPlanEvent(b *testing.B) {
	pos := mpos(700, "EURUSD", broker.Buy, 0.5, time.Second)
	b.Run("open", func(b *testing.B) {
		in := testInput(broker.Hedging)
		in.Master.Positions = []broker.Position{pos}
		ev := broker.Event{Kind: broker.Opened, Position: pos}
		b.ReportAllocs()
		for b.Loop() {
			if len(PlanAppliedEvent(ev, in).Actions) != 1 {
				b.Fatal("no open")
			}
		}
	})
	b.Run("close", func(b *testing.B) {
		in := testInput(broker.Hedging)
		in.Follower.Positions = []broker.Position{copyOf(9700, 700, "EURUSD", broker.Buy, 0.5)}
		in.TicketMap = []TicketMapEntry{{LinkID: 1, MasterTicket: 700, FollowerTicket: 9700, Volume: 1}}
		ev := broker.Event{Kind: broker.Closed, Position: pos}
		b.ReportAllocs()
		for b.Loop() {
			if len(PlanAppliedEvent(ev, in).Actions) != 1 {
				b.Fatal("no close")
			}
		}
	})
}
