package bridge_test

import (
	"context"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/bridge"
)

// TestServerRefusesAnExpiredRequestBeforeTheBroker: the bridge server checks the deadline
// by its own clock and never passes an order that arrived after it to the broker behind
// (here a simulator whose own clock would still accept it).
func TestServerRefusesAnExpiredRequestBeforeTheBroker(t *testing.T) {
	s := newSim()
	ahead := func() time.Time { return time.Now().Add(time.Hour) } // the bridge's clock
	ts := startServer(t, "127.0.0.1:0", s, s, bridge.ServerOptions{Clock: ahead})
	c := dial(t, ts.addr, bridge.ClientOptions{Token: testToken})
	sess := connect(t, c, "dl")
	ctx := context.Background()
	o := order()
	o.Deadline = time.Now().Add(time.Minute) // still ahead by the simulator's clock
	req := openReq(broker.Buy)
	req.Order = o
	_, err := sess.Open(ctx, req)
	wantClass(t, err, broker.ErrExpired, broker.CodeExpired)
	wantClass(t, sess.Fence(ctx, o), broker.ErrExpired, broker.CodeExpired)
	log, err := s.OrderLog(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 0 {
		t.Fatalf("an expired request reached the simulator: %+v", log)
	}
	// Without a deadline (or with one ahead by the bridge's clock) it goes through.
	req.Order = order()
	if _, err := sess.Open(ctx, req); err != nil {
		t.Fatal(err)
	}
}
