package actors

import (
	"context"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/snapcopier/copier/leasekeeper"
	"github.com/snapcopier/copier/store"
)

type flushTick struct{}

type flushDone struct {
	tickets []store.TicketRow // rows to retry after an error
	prot    []store.ProtectionRow
	err     error
}

// statusWriter batches statuses and positions snapshots (latest per account) and ticket-map
// rows and writes them with the fenced statements, at most once per FlushEvery, one write
// at a time.
type statusWriter struct {
	e        *engine
	statuses map[int64]store.AccountStatus
	snaps    map[int64]snapshotUpdate // latest per account
	tickets  [][]store.TicketRow
	// prot holds the latest protection state per (follower, scope); a stop-out must reach
	// the database, so a failed write is retried like the ticket map's.
	prot     map[[2]int64]store.ProtectionRow
	inFlight bool
	waiters  []*actor.PID // Flush requests waiting for an empty buffer
	stop     chan struct{}
}

func newStatusWriter(e *engine) actor.Producer {
	return func() actor.Actor {
		return &statusWriter{e: e, statuses: map[int64]store.AccountStatus{}, snaps: map[int64]snapshotUpdate{}, prot: map[[2]int64]store.ProtectionRow{}}
	}
}

// Receive implements actor.Actor.
func (w *statusWriter) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		w.stop = make(chan struct{})
		self, root, stop, every := ctx.Self(), ctx.ActorSystem().Root, w.stop, w.e.cfg.FlushEvery
		go func() {
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					root.Send(self, flushTick{})
				}
			}
		}()
	case *actor.Stopping:
		close(w.stop)
	case accountWrites:
		if len(m.tickets) > 0 {
			w.tickets = append(w.tickets, m.tickets)
		}
		for _, r := range m.protection {
			w.prot[[2]int64{r.FollowerID, r.LinkID}] = r
		}
		if m.hasStatus {
			w.statuses[m.status.ID] = m.status
		}
		if m.hasSnapshot {
			w.snaps[m.snapshot.row.ID] = m.snapshot
		}
	case flushTick:
		w.flush(ctx)
	case leasekeeper.Flush:
		w.waiters = append(w.waiters, ctx.Sender())
		w.flush(ctx)
	case flushDone:
		w.inFlight = false
		if m.err != nil {
			w.e.log.Warn().Err(m.err).Int("tickets", len(m.tickets)).Msg("status write failed; will retry")
			if len(m.tickets) > 0 {
				w.tickets = append([][]store.TicketRow{m.tickets}, w.tickets...) // older first: the newer row of a key wins
			}
			for _, r := range m.prot {
				if _, newer := w.prot[[2]int64{r.FollowerID, r.LinkID}]; !newer {
					w.prot[[2]int64{r.FollowerID, r.LinkID}] = r
				}
			}
		}
		if len(w.waiters) > 0 {
			if len(w.statuses) > 0 || len(w.snaps) > 0 || (len(w.tickets) > 0 || len(w.prot) > 0) && m.err == nil {
				w.flush(ctx)
				return
			}
			for _, pid := range w.waiters {
				if pid != nil {
					ctx.Send(pid, leasekeeper.Flushed{Err: m.err})
				}
			}
			w.waiters = nil
		}
	}
}

func (w *statusWriter) flush(ctx actor.Context) {
	if w.inFlight {
		return
	}
	if len(w.statuses) == 0 && len(w.snaps) == 0 && len(w.tickets) == 0 && len(w.prot) == 0 {
		for _, pid := range w.waiters {
			if pid != nil {
				ctx.Send(pid, leasekeeper.Flushed{})
			}
		}
		w.waiters = nil
		return
	}
	// The batch is copied out and the maps cleared, not replaced: a map that held every
	// account's row keeps its room for the next batch instead of growing again.
	statuses := make([]store.AccountStatus, 0, len(w.statuses))
	for _, s := range w.statuses {
		statuses = append(statuses, s)
	}
	pending := make([]snapshotUpdate, 0, len(w.snaps))
	for _, s := range w.snaps {
		pending = append(pending, s)
	}
	prot := make([]store.ProtectionRow, 0, len(w.prot))
	for _, r := range w.prot {
		prot = append(prot, r)
	}
	batches := w.tickets
	clear(w.statuses)
	clear(w.snaps)
	clear(w.prot)
	w.tickets = nil
	w.inFlight = true
	self, root, e := ctx.Self(), ctx.ActorSystem().Root, w.e
	go func() {
		wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var done flushDone
		if tickets := flatten(batches); len(tickets) > 0 {
			res, err := store.UpsertTicketsFenced(wctx, e.pool, e.cfg.NodeID, tickets)
			if err != nil {
				done.tickets, done.err = tickets, err
			}
			e.metrics.StaleWritesRefused.Add(res.Refused)
		}
		if len(prot) > 0 {
			res, err := store.WriteProtectionFenced(wctx, e.pool, e.cfg.NodeID, prot)
			if err != nil {
				done.prot = prot
				if done.err == nil {
					done.err = err
				}
			}
			e.metrics.StaleWritesRefused.Add(res.Refused)
		}
		if len(statuses) > 0 {
			res, err := store.WriteStatusesFenced(wctx, e.pool, e.cfg.NodeID, statuses)
			if err != nil && done.err == nil {
				done.err = err // statuses are refreshed by the next report; not retried
			}
			e.metrics.StaleWritesRefused.Add(res.Refused)
		}
		snaps := make([]store.PositionsSnapshot, 0, len(pending))
		for _, s := range pending {
			s.row.Positions = encodeSnapshot(s.positions)
			snaps = append(snaps, s.row)
		}
		if len(snaps) > 0 {
			res, err := store.WriteSnapshotsFenced(wctx, e.pool, e.cfg.NodeID, snaps)
			if err != nil && done.err == nil {
				done.err = err // refreshed by the next report; not retried
			}
			e.metrics.StaleWritesRefused.Add(res.Refused)
		}
		root.Send(self, done)
	}()
}

// flatten joins batches of rows in order.
func flatten[T any](batches [][]T) []T {
	n := 0
	for _, b := range batches {
		n += len(b)
	}
	out := make([]T, 0, n)
	for _, b := range batches {
		out = append(out, b...)
	}
	return out
}
