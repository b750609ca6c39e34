package store_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

// TestCycleAndFencedWritesNeverDeadlock runs lease cycles beside batched status and
// ticket-map writes over the same rows, in shuffled order, as a busy node does. Before
// the statements locked rows in id order, this deadlocked (SQLSTATE 40P01) within seconds.
func TestCycleAndFencedWritesNeverDeadlock(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	const n = 300
	seedAccounts(t, db.Pool, "mt5", "follower", 1, n)
	seedAccounts(t, db.Pool, "mt5", "master", 10_000, 1)
	if _, err := db.Pool.Exec(ctxT(t), `INSERT INTO copy_links (master_id, follower_id, magic) SELECT 10000, g, 7 FROM generate_series(1, $1::bigint) g`, n); err != nil {
		t.Fatal(err)
	}
	links := map[int64]int64{}
	rows, err := db.Pool.Query(ctxT(t), `SELECT follower_id, id FROM copy_links`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var f, l int64
		if err := rows.Scan(&f, &l); err != nil {
			t.Fatal(err)
		}
		links[f] = l
	}
	rows.Close()
	first := cycle(t, db.Pool, "n", nil, n)
	held := heldOf(first.Owned)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	run := func(f func(r *rand.Rand) error, seed uint64) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, 1))
			for ctx.Err() == nil {
				if err := f(r); err != nil && ctx.Err() == nil {
					errs <- err
					return
				}
			}
		}()
	}
	pool1, pool2, pool3 := db.NewPool(t, store.Options{}), db.NewPool(t, store.Options{}), db.NewPool(t, store.Options{})
	run(func(r *rand.Rand) error {
		h := append([]store.Held(nil), held...)
		r.Shuffle(len(h), func(i, j int) { h[i], h[j] = h[j], h[i] })
		_, err := store.LeaseCycle(ctx, pool1, store.CycleRequest{Node: "n", Platform: "mt5", Lease: time.Minute, Held: h, Capacity: n})
		return err
	}, 1)
	run(func(r *rand.Rand) error {
		batch := make([]store.AccountStatus, 0, n)
		for _, i := range r.Perm(n) {
			batch = append(batch, store.AccountStatus{ID: held[i].ID, Epoch: held[i].Epoch, Status: "copying", At: time.Now()})
		}
		_, err := store.WriteStatusesFenced(ctx, pool2, "n", batch)
		return err
	}, 2)
	run(func(r *rand.Rand) error {
		batch := make([]store.TicketRow, 0, n)
		for _, i := range r.Perm(n) {
			h := held[i]
			batch = append(batch, store.TicketRow{FollowerID: h.ID, Epoch: h.Epoch, LinkID: links[h.ID], MasterTicket: int64(r.IntN(50)), FollowerTicket: 1, Volume: 1})
		}
		_, err := store.UpsertTicketsFenced(ctx, pool3, "n", batch)
		return err
	}, 3)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestReleaseAllNeverDeadlocks releases and claims back every lease in a loop, the held
// pairs in shuffled order, beside batched status writes over the same rows. ReleaseAll
// locks rows in id order like every other multi-row statement; joined straight against
// the shuffled pairs it locked them in their order and deadlocked (SQLSTATE 40P01).
func TestReleaseAllNeverDeadlocks(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	const n = 300
	seedAccounts(t, db.Pool, "mt5", "follower", 1, n)
	var mu sync.Mutex
	held := heldOf(cycle(t, db.Pool, "n", nil, n).Owned)
	current := func() []store.Held {
		mu.Lock()
		defer mu.Unlock()
		return append([]store.Held(nil), held...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	run := func(pool *pgxpool.Pool, f func(r *rand.Rand, pool *pgxpool.Pool) error, seed uint64) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, 1))
			for ctx.Err() == nil {
				if err := f(r, pool); err != nil && ctx.Err() == nil {
					errs <- err
					return
				}
			}
		}()
	}
	run(db.NewPool(t, store.Options{}), func(r *rand.Rand, pool *pgxpool.Pool) error {
		h := current()
		r.Shuffle(len(h), func(i, j int) { h[i], h[j] = h[j], h[i] })
		if _, err := store.ReleaseAll(ctx, pool, "n", h); err != nil {
			return err
		}
		res, err := store.LeaseCycle(ctx, pool, store.CycleRequest{Node: "n", Platform: "mt5", Lease: time.Minute, Capacity: n})
		if err != nil {
			return err
		}
		mu.Lock()
		held = heldOf(res.Owned)
		mu.Unlock()
		return nil
	}, 1)
	for i := range 2 {
		run(db.NewPool(t, store.Options{}), func(r *rand.Rand, pool *pgxpool.Pool) error {
			h := current()
			batch := make([]store.AccountStatus, 0, len(h))
			for _, i := range r.Perm(len(h)) {
				batch = append(batch, store.AccountStatus{ID: h[i].ID, Epoch: h[i].Epoch, Status: "copying", At: time.Now()})
			}
			_, err := store.WriteStatusesFenced(ctx, pool, "n", batch)
			return err
		}, uint64(2+i))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
