package sim

import (
	"github.com/google/uuid"
	"github.com/snapcopier/copier/broker"
)

// outcome is what one order did: its result, the position it left and the events it
// produced. Rejections have a zero outcome.
type outcome struct {
	result broker.OrderResult
	pos    broker.Position // the position after the order (its last state when closed)
	// ev[:nev] are its events, Kind and Position set (publishing stamps the rest): in the
	// outcome itself, not a slice of their own, so that an order allocates none.
	ev  [2]broker.Event
	nev int
}

// events returns the outcome's events.
func (o *outcome) events() []broker.Event { return o.ev[:o.nev] }

// firstAnswer is a remembered answer to a request id.
type firstAnswer struct {
	result broker.OrderResult
	err    error
}

// dedupCache remembers the answers to the last capacity request ids of one account.
type dedupCache struct {
	capacity int
	answers  map[uuid.UUID]firstAnswer
	order    []uuid.UUID // ring of remembered ids, oldest at next once full
	next     int
}

func newDedupCache(capacity int) dedupCache {
	return dedupCache{capacity: capacity, answers: make(map[uuid.UUID]firstAnswer)}
}

func (c *dedupCache) get(id uuid.UUID) (firstAnswer, bool) {
	a, ok := c.answers[id]
	return a, ok
}

// put remembers the answer to id, forgetting the oldest id when full.
func (c *dedupCache) put(id uuid.UUID, a firstAnswer) {
	if _, ok := c.answers[id]; ok {
		return
	}
	if len(c.order) < c.capacity {
		c.order = append(c.order, id)
	} else {
		delete(c.answers, c.order[c.next])
		c.order[c.next] = id
		c.next = (c.next + 1) % c.capacity
	}
	c.answers[id] = a
}
