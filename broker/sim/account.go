package sim

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
	"github.com/snapcopier/copier/broker"
)

// account is one trading account. The fields above mu never change after creation; the
// ones below are guarded by mu, which every session and Controller call on the account
// holds while it runs (no call holds two account locks).
type account struct {
	login    string
	password string
	currency string
	leverage int
	suffix   string
	// faults is the account's own fault profile; nil means the global one applies.
	faults atomic.Pointer[broker.Faults]

	mu        sync.Mutex
	mode      broker.AccountMode
	balance   float64
	positions []*position // in ticket order
	tokenHWM  int64       // highest fencing token seen
	dedup     dedupCache
	rng       *rand.Rand // fault and dropped-event draws
	ids       *rand.Rand // request ids of master trades
	subs      []*subscription
}

// position is an open position with the symbol it trades.
type position struct {
	broker.Position
	sym *symbol
}

func newAccount(spec broker.AccountSpec, seed int64, dedupWindow int) *account {
	return &account{
		login:    spec.Login,
		password: spec.Password,
		currency: spec.Currency,
		leverage: spec.Leverage,
		suffix:   spec.SymbolSuffix,
		mode:     spec.Mode,
		balance:  spec.Balance,
		dedup:    newDedupCache(dedupWindow),
		rng:      rand.New(rand.NewPCG(uint64(seed), streamID("faults", spec.Login))),
		ids:      rand.New(rand.NewPCG(uint64(seed), streamID("ids", spec.Login))),
	}
}

// findLocked returns the open position with ticket, or nil.
func (a *account) findLocked(ticket int64) *position {
	for _, p := range a.positions {
		if p.Ticket == ticket {
			return p
		}
	}
	return nil
}

// bySymbolLocked returns the open position on the named symbol (netting accounts hold at
// most one), or nil.
func (a *account) bySymbolLocked(name string) *position {
	for _, p := range a.positions {
		if p.Symbol == name {
			return p
		}
	}
	return nil
}

// removeLocked drops p from the open positions.
func (a *account) removeLocked(p *position) {
	for i, q := range a.positions {
		if q == p {
			a.positions = append(a.positions[:i], a.positions[i+1:]...)
			return
		}
	}
}

// snapshotLocked returns copies of the open positions in ticket order.
func (a *account) snapshotLocked() []broker.Position {
	out := make([]broker.Position, len(a.positions))
	for i, p := range a.positions {
		out[i] = p.Position
	}
	return out
}

// newRequestID draws a version 4 UUID from the account's seeded id stream.
func (a *account) newRequestID() uuid.UUID {
	var id uuid.UUID
	for i := 0; i < len(id); i += 8 {
		v := a.ids.Uint64()
		for j := range 8 {
			id[i+j] = byte(v >> (8 * j))
		}
	}
	id[6] = id[6]&0x0f | 0x40
	id[8] = id[8]&0x3f | 0x80
	return id
}
