package sim

import (
	"sync"

	"github.com/snapcopier/copier/broker"
)

// logBlock is how many entries one block of the order log holds (fewer with a smaller
// Config.OrderLogLimit). The log grows by blocks and drops whole blocks: an append never
// copies older entries. Kept in one slice, a log kept whole (as the stress run keeps it)
// doubled by copying every entry under the log's lock, which every order of every account
// takes: at 400,000 orders one such copy moved about 50 MB while every order waited.
const logBlock = 4096

// orderLog is the server's order log: every order request in arrival order, numbered
// 1, 2, 3 ... It has its own lock, taken last and held only to append or to find what a
// read copies: an entry is never changed once appended, so a read copies outside it.
type orderLog struct {
	mu     sync.Mutex
	limit  int                      // keep at least this many of the newest entries; 0 keeps all
	blocks [][]broker.OrderLogEntry // every block full but the last
	first  int64                    // Seq of blocks[0][0]
	seq    int64                    // last Seq given
	n      int                      // entries held
}

func (l *orderLog) blockSize() int {
	if l.limit > 0 && l.limit < logBlock {
		return l.limit
	}
	return logBlock
}

// append numbers e and stores it.
func (l *orderLog) append(e broker.OrderLogEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	e.Seq = l.seq
	size := l.blockSize()
	last := len(l.blocks) - 1
	if last < 0 || len(l.blocks[last]) == size {
		if last < 0 {
			l.first = e.Seq
		}
		l.blocks = append(l.blocks, make([]broker.OrderLogEntry, 0, size))
		last++
	}
	l.blocks[last] = append(l.blocks[last], e)
	l.n++
	// Whole blocks go while the rest still holds at least limit entries.
	for l.limit > 0 && len(l.blocks) > 1 && l.n-len(l.blocks[0]) >= l.limit {
		l.n -= len(l.blocks[0])
		l.first += int64(len(l.blocks[0]))
		l.blocks[0] = nil
		l.blocks = l.blocks[1:]
	}
}

// read returns copies of the entries with Seq > after, at most limit (<= 0: all).
func (l *orderLog) read(after int64, limit int) []broker.OrderLogEntry {
	l.mu.Lock()
	i := int(max(after-l.first+1, 0))
	if i >= l.n {
		l.mu.Unlock()
		return []broker.OrderLogEntry{}
	}
	want := l.n - i
	if limit > 0 && want > limit {
		want = limit
	}
	// Every block but the last is full, so entry i is in block i/size.
	size := l.blockSize()
	var parts [][]broker.OrderLogEntry
	for b, off, left := i/size, i%size, want; left > 0; b, off = b+1, 0 {
		p := l.blocks[b][off:]
		p = p[:min(len(p), left)]
		parts = append(parts, p)
		left -= len(p)
	}
	l.mu.Unlock()
	out := make([]broker.OrderLogEntry, 0, want)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
