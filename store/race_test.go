package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

// trustWindow is one node process's trusted ownership of one account after one cycle:
// [started, started+lease−fence) on this test process's monotonic clock.
type trustWindow struct {
	proc        string
	epoch       int64
	from, until time.Time
}

// raceLedger collects what every simulated node was told, for invariant checks.
type raceLedger struct {
	mu          sync.Mutex
	windows     map[int64][]trustWindow // account → windows
	claimEpochs map[int64][]int64       // account → epochs returned by claims
	takeovers   int                     // claims of an account that had been claimed before
	violations  []string
}

func (l *raceLedger) takeoversSoFar() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.takeovers
}

func (l *raceLedger) record(proc string, capacity int, started time.Time, trust time.Duration, res store.CycleResult) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(res.Owned) > capacity {
		l.violations = append(l.violations, fmt.Sprintf("%s holds %d > capacity %d", proc, len(res.Owned), capacity))
	}
	until := started.Add(trust)
	for _, o := range res.Owned {
		if o.Claimed {
			if o.Epoch > 1 {
				l.takeovers++
			}
			l.claimEpochs[o.ID] = append(l.claimEpochs[o.ID], o.Epoch)
		}
		for _, w := range l.windows[o.ID] {
			if w.proc != proc && started.Before(w.until) && w.from.Before(until) {
				l.violations = append(l.violations, fmt.Sprintf("account %d trusted by %s (epoch %d) and %s (epoch %d) at once", o.ID, w.proc, w.epoch, proc, o.Epoch))
			}
		}
		l.windows[o.ID] = append(l.windows[o.ID], trustWindow{proc: proc, epoch: o.Epoch, from: started, until: until})
	}
}

// TestRacingNodes: 8 simulated nodes with their own pools and random capacities cycle
// concurrently over 2,000 followers, crashing and restarting at random (a restarted process
// forgets its leases, keeps its node id, and its old leases expire). Invariants: no two
// processes trust one account at once; no node exceeds its capacity; claims bump the epoch
// (every claim epoch is new and the row's final epoch counts every claim); masters and
// other platforms are never claimed; with enough capacity every follower ends up owned.
func TestRacingNodes(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	const followers = 2000
	seedAccounts(t, db.Pool, "mt5", "follower", 1, followers)
	seedAccounts(t, db.Pool, "mt5", "master", 10_001, 50)
	seedAccounts(t, db.Pool, "mt4", "follower", 20_001, 300)

	const (
		nodes    = 8
		lease    = 1500 * time.Millisecond
		fence    = 500 * time.Millisecond
		interval = 100 * time.Millisecond
	)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	ledger := &raceLedger{windows: map[int64][]trustWindow{}, claimEpochs: map[int64][]int64{}}

	type node struct {
		id       string
		pool     *pgxpool.Pool
		capacity int
		rng      *rand.Rand
	}
	var all []*node
	total := 0
	for i := 0; i < nodes; i++ {
		n := &node{
			id:       fmt.Sprintf("node-%d", i%6), // two pairs share a node id, as two processes on one host would
			pool:     db.NewPool(t, store.Options{MaxConns: 2}),
			capacity: 250 + rng.IntN(300),
			rng:      rand.New(rand.NewPCG(uint64(seed), uint64(i+2))),
		}
		total += n.capacity
		all = append(all, n)
	}
	if total < followers {
		t.Fatalf("test set-up: total capacity %d < %d", total, followers)
	}

	// Phase 1: churn with crashes for a few seconds and until crashed leases have been
	// taken over (how many cycles fit in the seconds depends on the machine's speed).
	// Phase 2: no crashes until every follower is owned (polled with a deadline).
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const minTakeovers = 100
	churnUntil := time.Now().Add(4 * time.Second)
	var churnOver atomic.Bool
	churning := func() bool {
		if churnOver.Load() {
			return false
		}
		if time.Now().Before(churnUntil) || ledger.takeoversSoFar() < minTakeovers {
			return true
		}
		churnOver.Store(true)
		return false
	}
	var mu sync.Mutex
	held := make([][]store.Held, nodes)
	var wg sync.WaitGroup
	done := make(chan struct{})
	for i, n := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			proc := fmt.Sprintf("proc-%d-life-0", i)
			life := 0
			var mine []store.Held
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				if churning() && n.rng.IntN(40) == 0 {
					// Crash: forget everything, stay away a few cycles, come back as a new process.
					life++
					proc = fmt.Sprintf("proc-%d-life-%d", i, life)
					mine = nil
					for k := 0; k < 3+n.rng.IntN(10); k++ {
						select {
						case <-tick.C:
						case <-ctx.Done():
							return
						}
					}
				}
				started := time.Now()
				res, err := store.LeaseCycle(ctx, n.pool, store.CycleRequest{Node: n.id, Platform: "mt5", Lease: lease, Held: mine, Capacity: n.capacity})
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("%s: %v", proc, err)
					}
					return
				}
				ledger.record(proc, n.capacity, started, lease-fence, res)
				mine = heldOf(res.Owned)
				mu.Lock()
				held[i] = mine
				mu.Unlock()
			}
		}()
	}
	// Wait for convergence: every follower owned by someone, after the churn ended.
	converged := false
	for !converged && ctx.Err() == nil {
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
		}
		if churning() {
			continue
		}
		mu.Lock()
		owned := map[int64]bool{}
		for _, h := range held {
			for _, x := range h {
				owned[x.ID] = true
			}
		}
		mu.Unlock()
		converged = len(owned) == followers
	}
	close(done)
	wg.Wait()
	if !converged {
		t.Fatalf("not every follower owned before the deadline")
	}

	ledger.mu.Lock()
	defer ledger.mu.Unlock()
	for i, v := range ledger.violations {
		if i == 10 {
			t.Errorf("... and %d more", len(ledger.violations)-10)
			break
		}
		t.Error(v)
	}
	// Epochs: each claim handed out a distinct epoch, increasing in claim order, and the
	// row's epoch counts every claim.
	rows, err := db.Pool.Query(ctxT(t), `SELECT id, lease_epoch FROM trading_accounts WHERE platform = 'mt5' AND role = 'follower'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	claims := 0
	for rows.Next() {
		var id, epoch int64
		if err := rows.Scan(&id, &epoch); err != nil {
			t.Fatal(err)
		}
		eps := ledger.claimEpochs[id]
		claims += len(eps)
		seen := map[int64]bool{}
		var maxEp int64
		for _, e := range eps {
			if seen[e] {
				t.Errorf("account %d: epoch %d handed out twice", id, e)
			}
			seen[e] = true
			maxEp = max(maxEp, e)
		}
		if epoch != int64(len(eps)) || maxEp != epoch {
			t.Errorf("account %d: final epoch %d, %d claims seen, highest %d", id, epoch, len(eps), maxEp)
		}
	}
	var stray int
	if err := db.Pool.QueryRow(ctxT(t), `SELECT count(*) FROM trading_accounts WHERE (role = 'master' OR platform <> 'mt5') AND (node_id IS NOT NULL OR lease_epoch <> 0)`).Scan(&stray); err != nil {
		t.Fatal(err)
	}
	if stray != 0 {
		t.Errorf("%d masters or other-platform accounts were claimed", stray)
	}
	t.Logf("%d claims in total (%d followers)", claims, followers)
	if claims < followers+minTakeovers {
		t.Errorf("only %d claims for %d followers: the churn did not exercise %d takeovers", claims, followers, minTakeovers)
	}
}
