package actors

import (
	"context"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/snapcopier/copier/leasekeeper"
	"github.com/snapcopier/copier/store"
)

type flushTick struct{}

type flushDone struct {
	gen     uint64
	tickets []store.TicketRow // rows to retry after an error
	prot    []store.ProtectionRow
	reports []report
	err     error
	batch   *writeBatch // emptied for the next flush; nil after an error
}

// writeBatch holds one write's rows. A write that succeeded hands its emptied batch back
// for the next flush, so the batches keep their room: allocated anew, they were a third of
// the bytes a 1,000-follower flush allocated (BENCHMARKS.md).
type writeBatch struct {
	tickets  []store.TicketRow
	prot     []store.ProtectionRow
	reports  []report
	statuses []store.AccountStatus
	snaps    []store.PositionsSnapshot
}

// empty drops the rows (and what they hold alive) and keeps the room.
func (b *writeBatch) empty() {
	clear(b.tickets)
	clear(b.prot)
	clear(b.reports)
	clear(b.statuses)
	clear(b.snaps)
	b.tickets, b.prot, b.reports, b.statuses, b.snaps = b.tickets[:0], b.prot[:0], b.reports[:0], b.statuses[:0], b.snaps[:0]
}

// flushWaiter is a Flush request: answered once flush gen (the first to start after the
// request) is done, which wrote every row queued before it (dueOnly: every row but the
// reports not yet due, as a periodic flush does).
type flushWaiter struct {
	pid     *actor.PID
	gen     uint64
	dueOnly bool
}

// flushDue asks for a flush of what a periodic flush writes (ticket rows, protection
// states, the reports that are due), answered with leasekeeper.Flushed once written: for
// benchmarks that copy at the node's own pace and still count every write.
type flushDue struct{}

// statusWriter writes what the AccountActors queue (writeQueue: reports, latest per
// account; ticket-map rows; protection states) with the fenced statements, at most once
// per FlushEvery and on request, one write at a time. A periodic flush writes the reports
// that are due; a requested one (Flush: before a lease is let go, or by an operator's
// tool) writes every report queued before it.
type statusWriter struct {
	e *engine
	// retry holds the ticket-map rows of a failed write, written before the queued ones;
	// prot the protection states of a failed write: a stop-out must reach the database,
	// so both are retried.
	retry    []store.TicketRow
	prot     map[[2]int64]store.ProtectionRow
	gen      uint64 // flushes started
	inFlight bool
	waiters  []flushWaiter
	spare    *writeBatch // the last successful write's batch, emptied
	stop     chan struct{}
}

func newStatusWriter(e *engine) actor.Producer {
	return func() actor.Actor {
		return &statusWriter{e: e, prot: map[[2]int64]store.ProtectionRow{}}
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
	case flushTick:
		w.flush(ctx)
	case leasekeeper.Flush:
		w.waiters = append(w.waiters, flushWaiter{pid: ctx.Sender(), gen: w.gen + 1})
		w.flush(ctx)
	case flushDue:
		w.waiters = append(w.waiters, flushWaiter{pid: ctx.Sender(), gen: w.gen + 1, dueOnly: true})
		w.flush(ctx)
	case flushDone:
		w.inFlight = false
		if m.batch != nil {
			w.spare = m.batch
		}
		if m.err != nil {
			w.e.log.Warn().Err(m.err).Int("tickets", len(m.tickets)).Int("reports", len(m.reports)).Msg("status write failed; will retry")
			w.retry = m.tickets // the next flush writes them before the newer queued rows
			w.e.writes.putBack(m.reports)
			for _, r := range m.prot {
				if _, newer := w.prot[[2]int64{r.FollowerID, r.LinkID}]; !newer {
					w.prot[[2]int64{r.FollowerID, r.LinkID}] = r
				}
			}
		}
		left := w.waiters[:0]
		for _, wt := range w.waiters {
			if wt.gen > m.gen {
				left = append(left, wt)
			} else if wt.pid != nil {
				ctx.Send(wt.pid, leasekeeper.Flushed{Err: m.err})
			}
		}
		clear(w.waiters[len(left):])
		w.waiters = left
		if len(w.waiters) > 0 {
			w.flush(ctx) // for requests that came while this one was written
		}
	}
}

func (w *statusWriter) flush(ctx actor.Context) {
	if w.inFlight {
		return
	}
	b := w.spare
	if b == nil {
		b = &writeBatch{}
	}
	w.spare = nil
	b.tickets = append(b.tickets, w.retry...) // a failed write's rows go before the newer ones
	w.retry = nil
	all := slices.ContainsFunc(w.waiters, func(wt flushWaiter) bool { return !wt.dueOnly })
	b.reports = w.e.writes.take(w.e.elapsed(), all, b.reports, func(taken []*pendingRows) {
		// Sized once: grown by appending shard after shard, the batch allocated about
		// three times its size on every flush.
		nt := 0
		for _, r := range taken {
			nt += len(r.tickets)
		}
		b.tickets = slices.Grow(b.tickets, nt)
		for _, r := range taken {
			b.tickets = append(b.tickets, r.tickets...)
			for k, p := range r.prot {
				w.prot[k] = p // after a failed write's rows: the newer row of a key wins
			}
		}
	})
	if len(b.tickets) == 0 && len(w.prot) == 0 && len(b.reports) == 0 {
		w.spare = b
		for _, wt := range w.waiters {
			if wt.pid != nil {
				ctx.Send(wt.pid, leasekeeper.Flushed{})
			}
		}
		w.waiters = nil
		return
	}
	for _, r := range w.prot {
		b.prot = append(b.prot, r)
	}
	clear(w.prot) // cleared, not replaced: the map keeps its room for the next batch
	w.gen++
	w.inFlight = true
	self, root, e, gen := ctx.Self(), ctx.ActorSystem().Root, w.e, w.gen
	tickets, prot, reports := b.tickets, b.prot, b.reports
	go func() {
		wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done := flushDone{gen: gen}
		if len(tickets) > 0 {
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
		reportsFailed := func(err error) { // queued again by flushDone
			done.reports = reports
			if done.err == nil {
				done.err = err
			}
		}
		statuses, snaps := b.statuses, b.snaps
		for i := range reports {
			r := &reports[i]
			statuses = append(statuses, r.status)
			if r.hasSnap {
				r.snap.row.Positions = encodeSnapshot(r.snap.positions)
				snaps = append(snaps, r.snap.row)
			}
		}
		b.statuses, b.snaps = statuses, snaps
		if len(statuses) > 0 {
			res, err := store.WriteStatusesFenced(wctx, e.pool, e.cfg.NodeID, statuses)
			if err != nil {
				reportsFailed(err)
			}
			e.metrics.StaleWritesRefused.Add(res.Refused)
		}
		if len(snaps) > 0 {
			res, err := store.WriteSnapshotsFenced(wctx, e.pool, e.cfg.NodeID, snaps)
			if err != nil {
				reportsFailed(err)
			}
			e.metrics.StaleWritesRefused.Add(res.Refused)
		}
		if done.err == nil {
			b.empty()
			done.batch = b
		}
		root.Send(self, done)
	}()
}
