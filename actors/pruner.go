package actors

import (
	"context"
	"math"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snapcopier/copier/store"
)

// KeepTicketHistory as Config.TicketHistory keeps closed ticket-map rows forever.
const KeepTicketHistory time.Duration = math.MaxInt64

const (
	// defaultTicketHistory is how long a closed ticket-map row is kept by default: a
	// month of "which follower ticket copied which master ticket" for support and audit.
	defaultTicketHistory = 30 * 24 * time.Hour
	// defaultPruneEvery is the pace of the history prune; each node starts its first at a
	// random point of the period, so a cluster's nodes rarely prune at once.
	defaultPruneEvery = 10 * time.Minute
	// pruneBatch rows are deleted per statement, and at most pruneBatches statements run
	// per turn: a backlog (a first start on a table that never was pruned) drains over
	// several turns instead of holding a connection for minutes.
	pruneBatch   = 5000
	pruneBatches = 100
)

// historyPruner deletes the ticket map's closed rows older than the history, on a
// connection of the pool, until Stop or Halt ends it. Every node runs one: the rows are
// taken with SKIP LOCKED, so two nodes pruning at once share the work.
type historyPruner struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// startPruner starts the prune loop, or nothing when the history is kept forever.
func startPruner(e *engine, pool *pgxpool.Pool) *historyPruner {
	p := &historyPruner{cancel: func() {}, done: make(chan struct{})}
	if e.cfg.TicketHistory == KeepTicketHistory {
		close(p.done)
		return p
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go func() {
		defer close(p.done)
		every := e.cfg.PruneEvery
		t := time.NewTimer(rand.N(every) + 1) // a random first turn spreads the nodes out
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			n, err := pruneTurn(ctx, pool, e.cfg.TicketHistory)
			if ctx.Err() != nil {
				return
			}
			e.metrics.TicketRowsPruned.Add(n)
			if err != nil {
				e.log.Warn().Err(err).Int64("deleted", n).Msg("ticket history prune failed; retrying next turn")
			} else if n > 0 {
				e.log.Info().Int64("deleted", n).Dur("older_than", e.cfg.TicketHistory).Msg("ticket history pruned")
			}
			if e.observe != nil {
				e.observe(Signal{Kind: SignalPruned, Node: e.cfg.NodeID, Pruned: n, Err: err})
			}
			t.Reset(every)
		}
	}()
	return p
}

// pruneTurn deletes batches until one comes back short (nothing older is left) or the
// turn's budget of batches is spent.
func pruneTurn(ctx context.Context, pool *pgxpool.Pool, history time.Duration) (int64, error) {
	var total int64
	for range pruneBatches {
		n, err := store.PruneClosedTickets(ctx, pool, history, pruneBatch)
		total += n
		if err != nil || n < pruneBatch {
			return total, err
		}
	}
	return total, nil
}

// stop ends the loop and waits for it (a statement in flight is cancelled).
func (p *historyPruner) stop() {
	p.cancel()
	<-p.done
}
