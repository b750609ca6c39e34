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
