package actors

import (
	"reflect"
	"sync"
	"time"

	"github.com/snapcopier/copier/broker"
)

// defaultSymbolsMaxAge is how long a session's symbol specifications are reused: many
// periodic repairs (10 s to a minute or so apart), so that most repairs ask the trade
// server only for the account and its positions.
const defaultSymbolsMaxAge = 10 * time.Minute

// symbolCache keeps each session's symbol specifications for the Reconciler. A reconcile
// fetched the follower's and every master's specifications each time (a list of every
// symbol the server has: hundreds on a real one), though they change only when the broker
// reconfigures a symbol; in a 20,000-follower run those two lists were the largest single
// cost of the nodes' bridge reads. A master's entry serves every reconcile of its
// followers (they plan with its contract sizes only); a follower's serves its periodic
// repairs, and a reconcile of any other cause (a start, a gap, an unknown outcome, a
// failed order, ...) fetches them again and refreshes the entry. Nothing reused is older
// than maxAge. An entry is kept per session: a reconnected account has a new one and
// starts afresh. The specs map is shared by every reconcile that reuses it, and nothing
// changes it after it is made.
type symbolCache struct {
	maxAge time.Duration
	now    func() time.Time

	mu      sync.Mutex
	entries map[broker.Session]symbolEntry
	swept   time.Time
	tables  *symbolTables // the maps, shared by the sessions of one trade server
}

type symbolEntry struct {
	specs    map[string]broker.SymbolSpec
	at       time.Time // when the session's specifications were read
	quotesAt time.Time // when the quotes in specs were read (a shared map's: at or before)
}

func newSymbolCache(maxAge time.Duration, now func() time.Time) *symbolCache {
	if maxAge <= 0 {
		maxAge = defaultSymbolsMaxAge
	}
	return &symbolCache{maxAge: maxAge, now: now, entries: map[broker.Session]symbolEntry{}, tables: newSymbolTables(maxAge)}
}

// cacheable reports whether s can be a map key (every broker's session is a pointer;
// a value type holding a map or slice would panic as one).
func cacheable(s broker.Session) bool {
	return s != nil && reflect.TypeOf(s).Comparable()
}

// get returns s's specifications and when their quotes were read, if the specifications
// were read less than maxAge ago.
func (c *symbolCache) get(s broker.Session) (map[string]broker.SymbolSpec, time.Time, bool) {
	if c == nil || !cacheable(s) {
		return nil, time.Time{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[s]
	if !ok || c.now().Sub(e.at) >= c.maxAge {
		return nil, time.Time{}, false
	}
	return e.specs, e.quotesAt, true
}

// share records specs, just read from s with their quotes read at quotesAt, as s's, and
// returns the map to keep instead (one shared by the sessions whose servers list the same
// specifications: symbolTables) with when its quotes were read.
func (c *symbolCache) share(s broker.Session, specs map[string]broker.SymbolSpec, quotesAt time.Time) (map[string]broker.SymbolSpec, time.Time) {
	if c == nil {
		return specs, quotesAt
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	specs, quotesAt = c.tables.share(specs, quotesAt, now)
	if cacheable(s) {
		c.entries[s] = symbolEntry{specs: specs, at: now, quotesAt: quotesAt}
		// Sessions that ended, or accounts that moved to another node.
		dropStale(c.entries, &c.swept, now, c.maxAge, func(e symbolEntry) time.Time { return e.at })
	}
	return specs, quotesAt
}

// dropStale deletes the entries of m whose time (at) is maxAge old, at most once per
// maxAge (*swept is when it last did).
func dropStale[K comparable, V any](m map[K]V, swept *time.Time, now time.Time, maxAge time.Duration, at func(V) time.Time) {
	if now.Sub(*swept) < maxAge {
		return
	}
	*swept = now
	for k, v := range m {
		if now.Sub(at(v)) >= maxAge {
			delete(m, k)
		}
	}
}

// len is the number of entries (tests).
func (c *symbolCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
