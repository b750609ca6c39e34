package follower

import (
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile"
)

// skipKey is one master position a link did not copy, and why.
type skipKey struct {
	link, ticket int64
	reason       reconcile.SkipReason
}

// journalSkips journals why link l did not copy master positions (the plan's skips of a
// master ticket): "why was this trade not copied?" is a copier user's first question. Each
// position and reason is journalled once while it lasts, not at every plan that meets it
// again (a periodic repair plans every open master position): a reconcile's plan (whole)
// sees all of the link's master positions, so it replaces the link's set; an event's (ev)
// adds to it, and a master position's close ends it. quote_stale is not journalled: the
// engine reads a quote and plans the copy again at once.
func (c *Core) journalSkips(l *link, res *reconcile.Result, whole bool, ev *broker.Event, now time.Time) {
	if whole && c.skips != nil {
		for k := range c.skips {
			if k.link == l.id && !skippedNow(res.Skipped, k) {
				delete(c.skips, k)
			}
		}
	}
	var closed int64
	if ev != nil && ev.Kind == broker.Closed {
		closed = ev.Position.Ticket
		for k := range c.skips {
			if k.link == l.id && k.ticket == closed {
				delete(c.skips, k)
			}
		}
	}
	for i := range res.Skipped {
		s := &res.Skipped[i]
		if s.MasterTicket == 0 || s.MasterTicket == closed || s.Reason == reconcile.SkipQuoteStale {
			continue
		}
		k := skipKey{link: l.id, ticket: s.MasterTicket, reason: s.Reason}
		if _, seen := c.skips[k]; seen {
			continue
		}
		if c.skips == nil {
			c.skips = map[skipKey]struct{}{}
		}
		c.skips[k] = struct{}{}
		c.ready.Journal = append(c.ready.Journal, Journal{Time: now, Link: l.id, MasterTicket: s.MasterTicket,
			Skip: s.Reason, SkipDetail: s.Detail, Result: "skipped"})
		c.note(Note{Kind: NoteSkipped, Link: l.id, Skip: s})
	}
}

// skippedNow reports whether skips hold k's master ticket and reason.
func skippedNow(skips []reconcile.Skip, k skipKey) bool {
	for i := range skips {
		if skips[i].MasterTicket == k.ticket && skips[i].Reason == k.reason {
			return true
		}
	}
	return false
}
