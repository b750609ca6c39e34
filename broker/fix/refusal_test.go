package fix_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix"
	"github.com/snapcopier/copier/broker/sim/fixfront"
)

// Against a venue that knows only standard FIX 4.4 (the strict front), every refusal of a
// message we send is matched to its request and returned at once, classified: a
// BusinessMessageReject (j) that names the request only by RefSeqNum (45), as quickfixgo
// and most engines send it for an unsupported message type, and a session Reject (3) of
// an order with a tag the venue does not know. The reply timeout is longer than the
// test's context: a refusal left unmatched ends as disconnected or unknown outcome, not
// as permanent.
func TestRefusalsMatchedAndClassified(t *testing.T) {
	e := newEnv(t, envOptions{front: fixfront.Options{Strict: true}, client: fix.Config{ReplyTimeout: time.Hour, StatusTimeout: -1}})
	s := connect(t, e, "strict")
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	wantRefused := func(what string, err error, names string) {
		t.Helper()
		if broker.ClassOf(err) != broker.ErrPermanent || !strings.Contains(err.Error(), names) {
			t.Fatalf("%s: %v (class %v), want a permanent refusal naming %s", what, err, broker.ClassOf(err), names)
		}
	}
	_, err := s.Symbols(ctx)
	wantRefused("Symbols", err, "SecurityListRequest (x)")
	_, err = s.Account(ctx)
	wantRefused("Account", err, "CollateralInquiry (BB)")
	_, err = s.Modify(ctx, broker.ModifyRequest{Order: order(), Ticket: 1, SL: 1})
	wantRefused("Modify", err, "OrderCancelReplaceRequest (G)")
	if ctx.Err() != nil {
		t.Fatal("a refusal was not matched before the context ended")
	}
}
