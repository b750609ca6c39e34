package actors

import (
	"testing"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile"
)

// The request id of an order depends on what the order is; it repeats only after an
// unknown outcome, so a FIX resend carries the same ClOrdID (with PossResend).
func TestRequestIDs(t *testing.T) {
	act := reconcile.Action{Kind: reconcile.Open, MasterTicket: 7, Symbol: "EURUSD", Side: broker.Buy, Volume: 0.1}
	key := requestKey(42, 3, act)
	if requestKey(42, 3, act) != key {
		t.Fatal("the key of one action differs between calls")
	}
	for _, other := range []string{requestKey(43, 3, act), requestKey(42, 4, act), requestKey(42, 3, reconcile.Action{Kind: reconcile.Open, MasterTicket: 8})} {
		if other == key {
			t.Fatalf("different follower, epoch or action share key %q", key)
		}
	}
	var ids requestIDs
	first := ids.next(key)
	ids.settled(key, broker.NewError(broker.ErrUnknownOutcome, broker.CodeTimeout, "timeout"))
	if ids.next(key) != first {
		t.Fatal("a resend after an unknown outcome got a new request id")
	}
	ids.settled(key, broker.NewError(broker.ErrRetryable, broker.CodeRequote, "requote"))
	second := ids.next(key)
	if second == first {
		t.Fatal("a send after a known refusal repeats the refused request id")
	}
	ids.settled(key, nil)
	if third := ids.next(key); third == second || third == first {
		t.Fatal("a send after a fill repeats an earlier request id")
	}
	if (requestIDs{}).next(key) != first {
		t.Fatal("request ids are not derived from the key alone")
	}
}
