package actors

import (
	"hash/maphash"
	"time"

	"github.com/snapcopier/copier/broker"
)

// symbolTables shares one map of symbol specifications among the accounts whose trade
// servers list the same symbols with the same specifications. A real server lists hundreds
// of symbols (a map of about 60 KiB), and the thousands of followers of a node trade on a
// handful of servers: one map per account was most of an account's memory. Tables match
// on everything but the quotes (Bid, Ask). A table keeps the quotes of the reading that
// made it and that reading's time, which the accounts sharing it carry as
// AccountState.QuotesAt: a plan treats those quotes as unknown once they are older than
// reconcile.QuoteMaxAge, as it would an account's own older reading (the reconcile that
// read them planned with its own, fresh ones). A reading replaces a table that is maxAge
// old, so what is shared is never older than maxAge; tables neither made nor shared for
// maxAge are dropped. Not safe for concurrent use: symbolCache's lock guards it.
type symbolTables struct {
	maxAge time.Duration
	seed   maphash.Seed
	byKey  map[uint64]*symbolTable
	swept  time.Time
}

// symbolTable is one shared map; nothing changes it after it is made.
type symbolTable struct {
	specs map[string]broker.SymbolSpec
	read  time.Time // when its specifications and quotes were read
	used  time.Time // when it was last made or shared
}

func newSymbolTables(maxAge time.Duration) *symbolTables {
	return &symbolTables{maxAge: maxAge, seed: maphash.MakeSeed(), byKey: map[uint64]*symbolTable{}}
}

// share returns the table whose specifications are those of specs, read at read, and
// when its own were read; specs becomes that table when there is none or it is maxAge old.
func (t *symbolTables) share(specs map[string]broker.SymbolSpec, read, now time.Time) (map[string]broker.SymbolSpec, time.Time) {
	// Tables neither made nor shared for maxAge.
	dropStale(t.byKey, &t.swept, now, t.maxAge, func(tab *symbolTable) time.Time { return tab.used })
	key := t.key(specs)
	if tab := t.byKey[key]; tab != nil && now.Sub(tab.read) < t.maxAge && sameSpecs(tab.specs, specs) {
		tab.used = now
		return tab.specs, tab.read
	}
	// None, too old, or another list under the same key (a hash collision: the newer
	// list takes the key, the older one's holders keep their map).
	t.byKey[key] = &symbolTable{specs: specs, read: read, used: now}
	return specs, read
}

// key hashes specs without their quotes, in any order of the map.
func (t *symbolTables) key(specs map[string]broker.SymbolSpec) uint64 {
	sum := uint64(len(specs))
	for name, s := range specs {
		sum += maphash.Comparable(t.seed, namedSpec{name, withoutQuote(s)})
	}
	return sum
}

// namedSpec is a map entry: its key and its specification.
type namedSpec struct {
	name string
	spec broker.SymbolSpec
}

func withoutQuote(s broker.SymbolSpec) broker.SymbolSpec {
	s.Bid, s.Ask = 0, 0
	return s
}

// sameSpecs reports whether a and b name the same symbols with the same specifications,
// quotes aside.
func sameSpecs(a, b map[string]broker.SymbolSpec) bool {
	if len(a) != len(b) {
		return false
	}
	for name, s := range a {
		o, ok := b[name]
		if !ok || withoutQuote(o) != withoutQuote(s) {
			return false
		}
	}
	return true
}
