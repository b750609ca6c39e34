package actors

import (
	"fmt"

	"github.com/google/uuid"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile"
)

// requestNS is the UUID name space of order request ids.
var requestNS = uuid.MustParse("5c0a7e2e-6b1d-4f57-9a53-6f1b0e2f9c11")

// maxRequestKeys bounds the per-account memory of request keys; when full it starts
// again (the ids of an old epoch or old actions are not needed any more).
const maxRequestKeys = 4096

// requestKey names what an order is: the follower, the action (kind, master and follower
// ticket, symbol, side, volume, stops) and the lease epoch. Two sends of the same action
// in the same epoch share the key.
func requestKey(follower, epoch int64, act reconcile.Action) string {
	return fmt.Sprintf("%d/%d/%d/%d/%d/%s/%d/%.8f/%g/%g", follower, epoch, act.Kind, act.MasterTicket, act.FollowerTicket,
		act.Symbol, act.Side, act.Volume, act.SL, act.TP)
}

// requestID derives an order's request id (the FIX ClOrdID) from its key and how many
// sends of that key had a known outcome: a resend after an unknown outcome repeats the
// id (so a venue answers with the first order's status instead of trading twice), while a
// send after a fill or a definite refusal gets a new one.
func requestID(key string, known int) uuid.UUID {
	return uuid.NewSHA1(requestNS, fmt.Appendf(nil, "%s#%d", key, known))
}

// requestIDs counts, per request key, the sends with a known outcome.
type requestIDs map[string]int

// next returns the request id for the next send of key.
func (r requestIDs) next(key string) uuid.UUID { return requestID(key, r[key]) }

// settled records the outcome of a send of key: anything but an unknown outcome moves
// the key on to a new id.
func (r *requestIDs) settled(key string, err error) {
	if broker.ClassOf(err) == broker.ErrUnknownOutcome || (err != nil && broker.ClassOf(err) == nil) {
		return
	}
	if *r == nil || len(*r) >= maxRequestKeys {
		*r = requestIDs{}
	}
	(*r)[key]++
}
