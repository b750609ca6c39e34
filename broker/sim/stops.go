package sim

import (
	"time"

	"github.com/snapcopier/copier/broker"
)

// sweepLocked closes the positions of a whose SL or TP the current price has reached,
// when Config.TriggerStops is on. The comment becomes "[sl]" or "[tp]" and subscribers get
// a Closed event. Stops are checked against the price at the moment of the sweep, not the
// path the price took since the last one. It returns how many positions closed.
func (s *Server) sweepLocked(a *account, now time.Time) int {
	if !s.cfg.TriggerStops {
		return 0
	}
	var events []broker.Event
	kept := a.positions[:0:0]
	for _, p := range a.positions {
		px := p.sym.closePrice(p.Side, now)
		hit := stopHit(p, px)
		if hit == "" || p.sym.tradable() != nil {
			kept = append(kept, p)
			continue
		}
		s.realiseLocked(a, p, p.Volume, px, now)
		p.Comment = hit
		events = append(events, broker.Event{Kind: broker.Closed, Position: p.Position})
	}
	if len(events) > 0 {
		a.positions = kept
		s.publishLocked(a, now, s.faultsFor(a), events)
	}
	return len(events)
}

// stopHit returns "[sl]" or "[tp]" when a position closing at px has reached a stop.
func stopHit(p *position, px float64) string {
	if p.Side == broker.Buy {
		switch {
		case p.SL != 0 && px <= p.SL:
			return "[sl]"
		case p.TP != 0 && px >= p.TP:
			return "[tp]"
		}
		return ""
	}
	switch {
	case p.SL != 0 && px >= p.SL:
		return "[sl]"
	case p.TP != 0 && px <= p.TP:
		return "[tp]"
	}
	return ""
}
