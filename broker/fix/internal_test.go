package fix

import (
	"testing"
	"time"

	"github.com/quickfixgo/quickfix"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix/fixwire"
	"github.com/snapcopier/copier/broker/sim"
	"github.com/snapcopier/copier/broker/sim/fixfront"
)

// A report for an order this session never sent is logged and ignored; the session keeps
// working.
func TestReportForUnknownOrder(t *testing.T) {
	srv := sim.New(sim.Config{Seed: 1, AutoProvision: true})
	f, err := fixfront.Start("127.0.0.1:0", srv, srv, fixfront.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	b, err := New(Config{Addr: f.Addr(), ReplyTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	bs, err := b.Connect(t.Context(), broker.Credentials{Login: "stray", Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bs.Close() })
	s := bs.(*session)
	for _, mt := range []string{fixwire.MsgExecutionReport, fixwire.MsgPositionReport, fixwire.MsgOrderCancelReject, "ZZ"} {
		m := quickfix.NewMessage()
		m.Header.SetString(quickfix.Tag(35), mt)
		m.Body.SetString(fixwire.TagClOrdID, "never-sent")
		m.Body.SetString(fixwire.TagExecType, fixwire.ExecTrade)
		m.Body.SetString(fixwire.TagOrdStatus, fixwire.StatusFilled)
		if rej := s.FromApp(m, s.id); rej != nil {
			t.Fatalf("%s for an unknown order rejected the message: %v", mt, rej)
		}
	}
	if _, err := s.Positions(t.Context()); err != nil {
		t.Fatalf("after stray reports: %v", err)
	}
}
