package fix

import (
	"context"
	"slices"
	"time"

	"github.com/snapcopier/copier/broker"
)

// pollFeed is Subscribe for venues that do not report the account's trades made outside
// the session (Config.PollPositions): it reads the positions (RequestForPositions) every
// interval and reports what changed since the previous read. The first read is the base
// and reports nothing (the consumer reconciles a new subscription). A read that fails, a
// new logon, the session's close or ctx ends the subscription: the consumer subscribes
// again into a new epoch, so nothing between two reads of different epochs is lost without
// a reconcile. Changes undone between two reads (an open closed within one interval) are
// not seen; events carry the time of the read that found them.
func (s *session) pollFeed(ctx context.Context, every time.Duration) (<-chan broker.Event, error) {
	s.mu.Lock()
	if !s.loggedOn || s.closed {
		s.mu.Unlock()
		return nil, errClosedOrDown(s)
	}
	down := s.down
	s.mu.Unlock()
	base, err := s.Positions(ctx)
	if err != nil {
		return nil, err
	}
	epoch := s.b.epochs.Add(1)
	ch := make(chan broker.Event, feedBuffer)
	go func() {
		defer close(ch)
		t := time.NewTicker(every)
		defer t.Stop()
		var seq int64
		last := byTicket(base)
		for {
			select {
			case <-ctx.Done():
				return
			case <-down:
				return
			case <-s.done:
				return
			case <-t.C:
			}
			rctx, cancel := context.WithTimeout(ctx, s.b.cfg.ReplyTimeout)
			ps, err := s.Positions(rctx)
			cancel()
			if err != nil {
				s.log.Debug().Err(err).Msg("fix: position poll failed; ending the feed")
				return
			}
			now := time.Now()
			for _, ev := range positionChanges(last, ps) {
				seq++
				ev.Login, ev.Epoch, ev.Seq, ev.ServerTime = s.creds.Login, epoch, seq, now
				select {
				case ch <- ev:
				default:
					return // the consumer fell feedBuffer events behind: a new epoch
				}
			}
			last = byTicket(ps)
		}
	}()
	return ch, nil
}

func byTicket(ps []broker.Position) map[int64]broker.Position {
	m := make(map[int64]broker.Position, len(ps))
	for _, p := range ps {
		m[p.Ticket] = p
	}
	return m
}

// positionChanges is what turned the positions before into now: opens and changes in the
// order of now, then closes by ticket order of before. A smaller volume is a partial close;
// any other difference (stops, comment) a modification.
func positionChanges(before map[int64]broker.Position, now []broker.Position) []broker.Event {
	var out []broker.Event
	seen := make(map[int64]bool, len(now))
	for _, p := range now {
		seen[p.Ticket] = true
		old, ok := before[p.Ticket]
		switch {
		case !ok:
			out = append(out, broker.Event{Kind: broker.Opened, Position: p})
		case p.Volume < old.Volume:
			out = append(out, broker.Event{Kind: broker.PartiallyClosed, Position: p})
		case p != old:
			out = append(out, broker.Event{Kind: broker.Modified, Position: p})
		}
	}
	var closed []int64
	for t := range before {
		if !seen[t] {
			closed = append(closed, t)
		}
	}
	slices.Sort(closed)
	for _, t := range closed {
		out = append(out, broker.Event{Kind: broker.Closed, Position: before[t]})
	}
	return out
}
