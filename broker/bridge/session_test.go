package bridge_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/bridge"
)

func TestSessionRoundTrip(t *testing.T) {
	s := newSim()
	ts := startServer(t, "127.0.0.1:0", s, s, bridge.ServerOptions{})
	c := dial(t, ts.addr, bridge.ClientOptions{})
	ctx := t.Context()
	sess := connect(t, c, "rt-1")

	info, err := sess.Account(ctx)
	if err != nil || info.Login != "rt-1" || info.Balance != 10000 || info.Mode != broker.Hedging {
		t.Fatalf("Account = %+v, %v", info, err)
	}
	specs, err := sess.Symbols(ctx)
	if err != nil || len(specs) == 0 || specs[0].Name != "EURUSD" || !(specs[0].Bid > 0) {
		t.Fatalf("Symbols = %+v, %v", specs, err)
	}
	feed, err := sess.Subscribe(ctx)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	req := openReq(broker.Buy)
	req.SL, req.Magic, req.Comment = 1.0, 77, "mc123"
	res, err := sess.Open(ctx, req)
	if err != nil || res.Ticket == 0 || res.Volume != 0.01 || res.ServerTime.IsZero() {
		t.Fatalf("Open = %+v, %v", res, err)
	}
	// The account's funds after the order travel with its result and its event.
	if f := res.Funds; !f.Known || f.Balance != 10000 || !(f.Equity > 9000 && f.Equity <= 10000) {
		t.Fatalf("Open's funds = %+v, want the account's balance and equity", f)
	}
	ev := recv(t, feed)
	if ev.Kind != broker.Opened || ev.Seq != 1 || ev.Position.Ticket != res.Ticket || ev.Position.Comment != "mc123" ||
		ev.Position.Magic != 77 || ev.Position.SL != 1.0 || ev.Login != "rt-1" || ev.Funds != res.Funds {
		t.Fatalf("event = %+v", ev)
	}
	if _, err := sess.Modify(ctx, broker.ModifyRequest{Order: order(), Ticket: res.Ticket, SL: 0.9, TP: 2}); err != nil {
		t.Fatalf("Modify: %v", err)
	}
	if ev := recv(t, feed); ev.Kind != broker.Modified || ev.Seq != 2 || ev.Position.TP != 2 {
		t.Fatalf("event = %+v", ev)
	}
	ps, err := sess.Positions(ctx)
	if err != nil || len(ps) != 1 || ps[0].Ticket != res.Ticket || ps[0].SL != 0.9 || ps[0].OpenTime.IsZero() {
		t.Fatalf("Positions = %+v, %v", ps, err)
	}
	cres, err := sess.ClosePosition(ctx, broker.CloseRequest{Order: order(), Ticket: res.Ticket})
	if err != nil || cres.Ticket != res.Ticket || !(cres.Price > 0) {
		t.Fatalf("ClosePosition = %+v, %v", cres, err)
	}
	if ev := recv(t, feed); ev.Kind != broker.Closed || ev.Seq != 3 || ev.Funds != cres.Funds {
		t.Fatalf("event = %+v", ev)
	}
	if info, err := sess.Account(ctx); err != nil || !cres.Funds.Known || cres.Funds.Balance != info.Balance || cres.Funds.Equity != info.Equity {
		t.Fatalf("Close's funds %+v, the account after it %+v (%v)", cres.Funds, info, err)
	}

	// Remote errors keep class and code.
	_, err = sess.ClosePosition(ctx, broker.CloseRequest{Order: order(), Ticket: 1})
	wantClass(t, err, broker.ErrPermanent, broker.CodeInvalidRequest)
	_, err = sess.Open(ctx, broker.OpenRequest{Order: order(), Symbol: "EURUSD", Side: broker.Buy, Volume: 0.015})
	wantClass(t, err, broker.ErrPermanent, broker.CodeInvalidVolume)
	// The worst price travels: a buy bounded below the market is requoted.
	_, err = sess.Open(ctx, broker.OpenRequest{Order: order(), Symbol: "EURUSD", Side: broker.Buy, Volume: 0.01, WorstPrice: specs[0].Bid / 2})
	wantClass(t, err, broker.ErrRetryable, broker.CodeRequote)

	// Close ends the feed and later calls fail like the simulator's do.
	if err := sess.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	waitClosed(t, feed)
	_, err = sess.Positions(ctx)
	wantClass(t, err, broker.ErrDisconnected, broker.CodeNoConnection)
	if err := sess.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestSubscriptionEndsWithContext(t *testing.T) {
	s := newSim()
	ts := startServer(t, "127.0.0.1:0", s, s, bridge.ServerOptions{})
	c := dial(t, ts.addr, bridge.ClientOptions{})
	sess := connect(t, c, "sub-ctx")
	ctx, cancel := context.WithCancel(t.Context())
	feed, err := sess.Subscribe(ctx)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	other, err := sess.Subscribe(t.Context())
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	cancel()
	waitClosed(t, feed)
	// The other subscription is unaffected.
	if _, err := s.MasterOpen(t.Context(), "sub-ctx", broker.MasterOpenRequest{Symbol: "EURUSD", Side: broker.Sell, Volume: 0.01}); err != nil {
		t.Fatalf("MasterOpen: %v", err)
	}
	if ev := recv(t, other); ev.Kind != broker.Opened {
		t.Fatalf("event = %+v", ev)
	}
}

func TestBadTokenRefused(t *testing.T) {
	s := newSim()
	ts := startServer(t, "127.0.0.1:0", s, s, bridge.ServerOptions{})
	_, err := bridge.Dial(t.Context(), ts.addr, bridge.ClientOptions{Token: "wrong"})
	wantClass(t, err, broker.ErrPermanent, broker.CodeAuthFailed)
	if !strings.Contains(err.Error(), "bad token") {
		t.Fatalf("error %q does not say why", err)
	}
	// Nothing listens: the error says the server cannot be reached.
	ts.stop(t)
	_, err = bridge.Dial(t.Context(), ts.addr, bridge.ClientOptions{Token: testToken})
	wantClass(t, err, broker.ErrDisconnected, broker.CodeNoConnection)
}

func TestBadCredentials(t *testing.T) {
	s := newSim()
	ts := startServer(t, "127.0.0.1:0", s, s, bridge.ServerOptions{})
	c := dial(t, ts.addr, bridge.ClientOptions{})
	ctx := t.Context()
	if err := c.Provision(ctx, broker.AccountSpec{Login: "locked", Password: "right"}); err != nil {
		t.Fatalf("Provision: %v", err)
	}
	_, err := c.Connect(ctx, broker.Credentials{Login: "locked", Password: "wrong"})
	wantClass(t, err, broker.ErrPermanent, broker.CodeAuthFailed)
	sess, err := c.Connect(ctx, broker.Credentials{Login: "locked", Password: "right"})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	_ = sess.Close()
}

func TestOrderDeadlineIsUnknownOutcome(t *testing.T) {
	s := newSim()
	ts := startServer(t, "127.0.0.1:0", s, s, bridge.ServerOptions{})
	c := dial(t, ts.addr, bridge.ClientOptions{})
	sess := connect(t, c, "slow")
	ctx := t.Context()
	if err := c.SetFaults(ctx, "slow", broker.Faults{Latency: 5 * time.Second}); err != nil {
		t.Fatalf("SetFaults: %v", err)
	}

	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := sess.Open(short, openReq(broker.Buy))
	wantClass(t, err, broker.ErrUnknownOutcome, broker.CodeTimeout)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %q does not wrap the deadline", err)
	}
	if waited := time.Since(start); waited > 3*time.Second {
		t.Fatalf("Open returned after %v, long after its deadline", waited)
	}

	// A read that hits its deadline is safe to resend: disconnected.
	short2, cancel2 := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel2()
	_, err = sess.Positions(short2)
	wantClass(t, err, broker.ErrDisconnected, 0)

	// The server cancelled both (the simulator fails them before executing), and the
	// session keeps working once the latency is gone.
	if err := c.SetFaults(ctx, "slow", broker.Faults{}); err != nil {
		t.Fatalf("SetFaults: %v", err)
	}
	ps, err := sess.Positions(ctx)
	if err != nil || len(ps) != 0 {
		t.Fatalf("Positions = %+v, %v", ps, err)
	}
}

func TestSlowRequestDoesNotBlockOthers(t *testing.T) {
	s := newSim()
	ts := startServer(t, "127.0.0.1:0", s, s, bridge.ServerOptions{})
	c := dial(t, ts.addr, bridge.ClientOptions{})
	ctx := t.Context()
	slow, fast := connect(t, c, "slow-1"), connect(t, c, "fast-1")
	if err := c.SetFaults(ctx, "slow-1", broker.Faults{Latency: 10 * time.Second}); err != nil {
		t.Fatalf("SetFaults: %v", err)
	}
	slowCtx, cancel := context.WithCancel(ctx)
	slowDone := make(chan error, 1)
	go func() {
		_, err := slow.Positions(slowCtx)
		slowDone <- err
	}()
	for range 20 {
		if _, err := fast.Open(ctx, openReq(broker.Buy)); err != nil {
			t.Fatalf("Open: %v", err)
		}
	}
	select {
	case err := <-slowDone:
		t.Fatalf("the slow call ended early: %v", err)
	default:
	}
	cancel()
	wantClass(t, <-slowDone, broker.ErrDisconnected, 0)
}

func TestInflightLimit(t *testing.T) {
	s := newSim()
	ts := startServer(t, "127.0.0.1:0", s, s, bridge.ServerOptions{MaxInflight: 2})
	c := dial(t, ts.addr, bridge.ClientOptions{})
	ctx := t.Context()
	sess := connect(t, c, "busy")
	if err := c.SetFaults(ctx, "busy", broker.Faults{Latency: 10 * time.Second}); err != nil {
		t.Fatalf("SetFaults: %v", err)
	}
	slowCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	started := make(chan struct{}, 2)
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			started <- struct{}{}
			_, err := sess.Account(slowCtx)
			errs <- err
		}()
	}
	<-started
	<-started
	// Both slots are taken (eventually): a third request waits for a slot and, when its
	// deadline passes first, fails without having been sent.
	eventually(t, 5*time.Second, "third request refused for lack of a slot", func() error {
		short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		_, err := sess.Account(short)
		if err == nil || !strings.Contains(err.Error(), "no free request slot") {
			return errors.New("not refused for lack of a slot: " + errString(err))
		}
		wantClass(t, err, broker.ErrDisconnected, broker.CodeNoConnection)
		return nil
	})
	cancel()
	for range 2 {
		wantClass(t, <-errs, broker.ErrDisconnected, 0)
	}
	if err := c.SetFaults(ctx, "busy", broker.Faults{}); err != nil {
		t.Fatalf("SetFaults: %v", err)
	}
	if _, err := sess.Account(ctx); err != nil {
		t.Fatalf("Account after the slow calls: %v", err)
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func TestListenAndServe(t *testing.T) {
	s := newSim()
	srv := bridge.NewServer(s, s, bridge.ServerOptions{Token: testToken})
	done := make(chan error, 1)
	go func() { done <- srv.ListenAndServe("127.0.0.1:0") }()
	var addr string
	eventually(t, 10*time.Second, "the server to listen", func() error {
		if a := srv.Addr(); a != nil {
			addr = a.String()
			return nil
		}
		return errors.New("no address yet")
	})
	c := dial(t, addr, bridge.ClientOptions{})
	sess := connect(t, c, "las")
	if _, err := sess.Account(t.Context()); err != nil {
		t.Fatalf("Account: %v", err)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-done; !errors.Is(err, bridge.ErrServerClosed) {
		t.Fatalf("ListenAndServe returned %v", err)
	}
	if srv.Addr() != nil {
		t.Fatal("Addr after Close")
	}
	if err := srv.Serve(listen(t, "127.0.0.1:0")); !errors.Is(err, bridge.ErrServerClosed) {
		t.Fatalf("Serve after Close: %v", err)
	}
}
