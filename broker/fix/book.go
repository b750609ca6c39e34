package fix

import (
	"context"
	"errors"
	"hash/fnv"
	"sort"
	"sync"

	"github.com/snapcopier/copier/broker"
)

// Book keeps the positions an account holds at a venue that cannot be asked for them (the
// fix44 dialect without RequestForPositions): the broker tracks them from its own fills.
// It must outlive the process and follow the account to the node that takes it over, so
// the node's implementation is the store's (fenced by the account's owner and lease epoch
// there: a write from a node that lost the account is refused). MemBook serves embedding
// and tests.
type Book interface {
	// Positions returns the account's tracked positions.
	Positions(ctx context.Context, login string) ([]BookPosition, error)
	// Put records p; a p with no volume removes the position. fence is the order whose
	// fill changed it: its Token is the sender's lease epoch, and a store-backed book
	// refuses (with an error) a write from an owner that no longer holds the account.
	Put(ctx context.Context, login string, fence broker.Order, p BookPosition) error
}

// BookPosition is one tracked position: the position as the broker reports it (its SL
// and TP are the prices of its resting protective orders) and the ClOrdIDs of those
// orders, so that a restart or the node that takes the account over can replace or
// cancel them. Its JSON is the position's fields with the two ids beside them (a row
// written before the ids existed reads as a position without protective orders).
type BookPosition struct {
	broker.Position
	// SLOrder is the ClOrdID of the resting Stop order (40=3) that is the position's
	// stop-loss, "" when it has none; TPOrder that of the Limit order (40=2) that is its
	// take-profit.
	SLOrder string `json:",omitempty"`
	TPOrder string `json:",omitempty"`
}

// MemBook is a Book in memory: it is lost with the process. Its fence is the highest
// Token seen per account: a write with a lower one is refused.
type MemBook struct {
	mu     sync.Mutex
	m      map[string]map[int64]BookPosition
	tokens map[string]int64
}

// ErrStaleBookWrite is a book write refused by the fence: the account has a newer owner.
var ErrStaleBookWrite = errors.New("fix: position book write refused: the account has a newer owner")

var _ Book = (*MemBook)(nil)

// NewMemBook returns an empty MemBook.
func NewMemBook() *MemBook {
	return &MemBook{m: map[string]map[int64]BookPosition{}, tokens: map[string]int64{}}
}

// Positions implements Book, in ticket order.
func (b *MemBook) Positions(_ context.Context, login string) ([]BookPosition, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := []BookPosition{}
	for _, p := range b.m[login] {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Ticket < out[j].Ticket })
	return out, nil
}

// Put implements Book.
func (b *MemBook) Put(_ context.Context, login string, fence broker.Order, p BookPosition) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if fence.Token < b.tokens[login] {
		return ErrStaleBookWrite
	}
	b.tokens[login] = fence.Token
	if p.Volume <= 0 {
		delete(b.m[login], p.Ticket)
		return nil
	}
	if b.m[login] == nil {
		b.m[login] = map[int64]BookPosition{}
	}
	b.m[login][p.Ticket] = p
	return nil
}

// bookTicket is the ticket of the position an order opens: derived from its ClOrdID, so a
// resent order names the same position on every node. 53 bits: it stays exact in JSON.
func bookTicket(clOrdID string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(clOrdID))
	t := int64(h.Sum64() & (1<<53 - 1))
	if t == 0 {
		t = 1
	}
	return t
}

// volEps absorbs float noise in lot arithmetic (lots have at most a few decimals).
const volEps = 1e-9

// applyFill returns the positions that change when an order of side for vol lots fills in
// symbol on a netting account: it first reduces the tracked positions of the opposite side
// in that symbol (the named one first, then the oldest); what is left adds to the oldest
// tracked position of the same side in that symbol, as a netting venue does (its ticket,
// magic, comment and protective orders kept, the open price weighted), else opens open (its Ticket, Side,
// Volume set here). A returned position with no volume is closed.
func applyFill(held []BookPosition, symbol string, side broker.Side, vol float64, named int64, open BookPosition) []BookPosition {
	var opp []BookPosition
	for _, p := range held {
		if p.Symbol == symbol && p.Side != side {
			opp = append(opp, p)
		}
	}
	sort.SliceStable(opp, func(i, j int) bool {
		if (opp[i].Ticket == named) != (opp[j].Ticket == named) {
			return opp[i].Ticket == named
		}
		return opp[i].OpenTime.Before(opp[j].OpenTime)
	})
	var out []BookPosition
	for _, p := range opp {
		if vol <= volEps {
			break
		}
		take := min(vol, p.Volume)
		p.Volume -= take
		if p.Volume <= volEps {
			p.Volume = 0
		}
		vol -= take
		out = append(out, p)
	}
	if vol <= volEps {
		return out
	}
	var same *BookPosition
	for i := range held {
		if p := &held[i]; p.Symbol == symbol && p.Side == side && (same == nil || p.OpenTime.Before(same.OpenTime)) {
			same = p
		}
	}
	if same != nil {
		// The netting planner grows a position with an open of the difference: a second
		// tracked position would look like a duplicate copy to it.
		p := *same
		total := p.Volume + vol
		if open.OpenPrice > 0 && p.OpenPrice > 0 {
			p.OpenPrice = (p.OpenPrice*p.Volume + open.OpenPrice*vol) / total
		}
		p.Volume = total
		return append(out, p)
	}
	if open.Ticket != 0 {
		open.Symbol, open.Side, open.Volume = symbol, side, vol
		out = append(out, open)
	}
	return out
}
