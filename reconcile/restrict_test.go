package reconcile

import (
	"slices"
	"sync/atomic"
	"testing"

	"pgregory.net/rapid"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile/protect"
)

// TestRestrictionModel: random histories of the planner model (model_test.go) reach a
// state, then one link is restricted the way a stop-out restricts it:
//
// Both ways of restricting are drawn: Input.Restrict (the engine's, for a stop-out) and the
// link's own protect.close_only setting.
//
//   - CloseCopies closes every copy of the link and nothing else (apply checks positions of
//     no link untouched), and leaves the master positions open at that time tombstoned;
//   - NoNewCopies, while the master trades, copies nothing new;
//   - lifted, no master position whose copy the restriction closed is copied again.
func TestRestrictionModel(t *testing.T) {
	var stats modelStats
	var histories, closed, held atomic.Int64
	rapid.Check(t, func(t *rapid.T) {
		histories.Add(1)
		md := genModel(t, &stats)
		for range rapid.IntRange(0, 15).Draw(t, "steps") {
			md.step(t)
			md.check(t)
		}
		md.reconcile(t)
		li := rapid.IntRange(0, len(md.links)-1).Draw(t, "restricted")
		ml := md.links[li]

		if rapid.Bool().Draw(t, "mapLost") {
			// The link's map writes were lost: its copies are known by their markers only.
			md.f.ticketMap = slices.DeleteFunc(md.f.ticketMap, func(e TicketMapEntry) bool { return e.LinkID == ml.link.ID })
		}
		// The master positions copied when the copies are closed: never copied again.
		copied := map[int64]bool{}
		for _, e := range md.f.ticketMap {
			if _, open := findPos(ml.master.Positions, e.MasterTicket); open && e.LinkID == ml.link.ID {
				copied[e.MasterTicket] = true
			}
		}
		for _, p := range md.f.positions {
			if mt, ok := ParseMarker(p.Comment); ok && p.Magic == ml.link.Magic {
				copied[mt] = true
			}
		}

		// The engine restricts (a stop-out), or the link's own close-only mode does.
		viaSettings := rapid.Bool().Draw(t, "viaSettings")
		restrict := func(r Restriction) {
			ml.restrict, ml.link.Settings.Protect.CloseOnly = Unrestricted, protect.CopyNormally
			switch {
			case !viaSettings:
				ml.restrict = r
			case r == CloseCopies:
				ml.link.Settings.Protect.CloseOnly = protect.CloseNow
			case r == NoNewCopies:
				ml.link.Settings.Protect.CloseOnly = protect.LetClose
			}
		}
		restrict(CloseCopies)
		if md.copiesOf(ml) > 0 {
			closed.Add(1)
		}
		md.reconcile(t)
		if n := md.copiesOf(ml); n > 0 {
			t.Fatalf("link %d closed its copies but %d positions of its magic remain:\n%+v\nmap %v", ml.link.ID, n, md.f.positions, md.f.ticketMap)
		}

		restrict(NoNewCopies)
		for range rapid.IntRange(0, 4).Draw(t, "restrictedEvents") {
			if _, ok := md.masterEvent(t, li); ok {
				res := Plan(md.input(li, md.f.ticketMap))
				for _, sk := range res.Skipped {
					if sk.Reason == SkipRestricted {
						held.Add(1)
					}
				}
				for _, a := range res.Actions {
					if a.Kind == Open || len(a.Track) > 0 {
						t.Fatalf("link %d copies nothing new, yet plans %v", ml.link.ID, a)
					}
				}
				md.reconcile(t)
			}
		}
		if n := md.copiesOf(ml); n > 0 {
			t.Fatalf("link %d opened %d positions while no new copies were allowed", ml.link.ID, n)
		}

		restrict(Unrestricted)
		md.reconcile(t)
		md.check(t)
		for _, p := range md.f.positions {
			if p.Magic != ml.link.Magic {
				continue
			}
			for _, e := range md.f.ticketMap {
				if e.LinkID == ml.link.ID && e.FollowerTicket == p.Ticket && copied[e.MasterTicket] {
					t.Fatalf("link %d (%v) copies master %d again after its copy was closed by the restriction: %+v\nfollower %+v\nmap %v", ml.link.ID, md.mode, e.MasterTicket, p, md.f.positions, md.f.ticketMap)
				}
			}
			if mt, ok := ParseMarker(p.Comment); ok && copied[mt] && md.mode == broker.Hedging {
				t.Fatalf("link %d reopened a copy of master %d after the restriction: %+v", ml.link.ID, mt, p)
			}
		}
	})
	t.Logf("%d histories, %d with copies closed by the restriction, %d master positions held back", histories.Load(), closed.Load(), held.Load())
}

// copiesOf counts the follower positions of a link's magic number.
func (md *model) copiesOf(ml *mlink) int {
	n := 0
	for _, p := range md.f.positions {
		if p.Magic == ml.link.Magic {
			n++
		}
	}
	return n
}
