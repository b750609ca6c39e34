package sim

import (
	"sync"

	"github.com/snapcopier/copier/broker"
)

// orderLog is the server's order log: every order request in arrival order, numbered
// 1, 2, 3 ... It has its own lock, taken last and held only to append or copy.
type orderLog struct {
	mu      sync.Mutex
	limit   int // keep at least this many of the newest entries; 0 keeps all
	entries []broker.OrderLogEntry
	first   int64 // Seq of entries[0]
	seq     int64 // last Seq given
}

// append numbers e and stores it.
func (l *orderLog) append(e broker.OrderLogEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	e.Seq = l.seq
	if len(l.entries) == 0 {
		l.first = e.Seq
	}
	l.entries = append(l.entries, e)
	if l.limit > 0 && len(l.entries) >= 2*l.limit {
		// Shift in place: readers get copies, and the array keeps its capacity instead of
		// growing again after every compaction.
		drop := len(l.entries) - l.limit
		n := copy(l.entries, l.entries[drop:])
		clear(l.entries[n:]) // release the dropped entries' strings
		l.entries = l.entries[:n]
		l.first += int64(drop)
	}
}

// read returns copies of the entries with Seq > after, at most limit (<= 0: all).
func (l *orderLog) read(after int64, limit int) []broker.OrderLogEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := max(after-l.first+1, 0)
	if i >= int64(len(l.entries)) {
		return []broker.OrderLogEntry{}
	}
	out := l.entries[i:]
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return append([]broker.OrderLogEntry(nil), out...)
}
