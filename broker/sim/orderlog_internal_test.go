package sim

import (
	"sync"
	"testing"

	"github.com/snapcopier/copier/broker"
)

// TestOrderLogAcrossBlocks: reads from any point, with and without a limit, return the
// entries in Seq order without a gap, across the log's blocks; a bounded log keeps at
// least its limit and drops whole blocks of the oldest.
func TestOrderLogAcrossBlocks(t *testing.T) {
	for _, limit := range []int{0, 3, 5000} {
		l := &orderLog{limit: limit}
		const n = 3*logBlock + 17
		for i := range n {
			l.append(broker.OrderLogEntry{Ticket: int64(i + 1)})
		}
		all := l.read(0, 0)
		if len(all) == 0 || all[len(all)-1].Seq != n {
			t.Fatalf("limit %d: log ends at %+v, want Seq %d", limit, all[len(all)-1:], n)
		}
		if limit == 0 && len(all) != n {
			t.Fatalf("unbounded log holds %d of %d", len(all), n)
		}
		if limit > 0 && (len(all) < limit || len(all) >= limit+l.blockSize()) {
			t.Fatalf("limit %d: holds %d, want at least the limit and less than a block more", limit, len(all))
		}
		for i, e := range all {
			if e.Ticket != e.Seq || (i > 0 && e.Seq != all[i-1].Seq+1) {
				t.Fatalf("limit %d: entry %d is %+v after %+v", limit, i, e, all[max(i-1, 0)])
			}
		}
		first := all[0].Seq
		for _, after := range []int64{first - 1, first + int64(logBlock) - 2, n - 5, n - 1, n} {
			for _, most := range []int{0, 1, logBlock + 3} {
				got := l.read(after, most)
				want := max(0, int(n-max(after, first-1)))
				if most > 0 && want > most {
					want = most
				}
				if len(got) != want || (want > 0 && got[0].Seq != max(after, first-1)+1) {
					t.Fatalf("limit %d: read(%d, %d) = %d entries from %v, want %d", limit, after, most, len(got), got[:min(1, len(got))], want)
				}
			}
		}
	}
}

// TestOrderLogReadsBesideAppends: reads copy outside the lock while appends go on (run
// with -race): what a read returns is contiguous and never changes afterwards.
func TestOrderLogReadsBesideAppends(t *testing.T) {
	l := &orderLog{}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 2 * logBlock {
			l.append(broker.OrderLogEntry{Ticket: int64(i + 1)})
		}
	}()
	var after int64
	for after < 2*logBlock {
		got := l.read(after, 100)
		for _, e := range got {
			if e.Seq != after+1 || e.Ticket != e.Seq {
				t.Fatalf("read after %d: got %+v", after, e)
			}
			after = e.Seq
		}
	}
	wg.Wait()
}
