package fix

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
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

// A refusal is classified from what it says: the dialect's class first, a business reject
// that says "not now" as retryable, everything else (unsupported type, a bad or unknown
// tag) as permanent. Any other message is not a refusal.
func TestRefusalClasses(t *testing.T) {
	msg := func(mt string, fields map[quickfix.Tag]string) *quickfix.Message {
		m := quickfix.NewMessage()
		m.Header.SetString(quickfix.Tag(35), mt)
		for k, v := range fields {
			m.Body.SetString(k, v)
		}
		return m
	}
	for _, c := range []struct {
		name  string
		m     *quickfix.Message
		class error
	}{
		{"session reject", msg(fixwire.MsgReject, map[quickfix.Tag]string{fixwire.TagRefSeqNum: "4", fixwire.TagSessionRejReason: "2", fixwire.TagRefTagID: "9001"}), broker.ErrPermanent},
		{"unsupported type", msg(fixwire.MsgBusinessMessageReject, map[quickfix.Tag]string{fixwire.TagBizRejReason: "3", fixwire.TagRefMsgType: "x"}), broker.ErrPermanent},
		{"application not available", msg(fixwire.MsgBusinessMessageReject, map[quickfix.Tag]string{fixwire.TagBizRejReason: "4"}), broker.ErrRetryable},
		{"firm not available", msg(fixwire.MsgBusinessMessageReject, map[quickfix.Tag]string{fixwire.TagBizRejReason: "7"}), broker.ErrRetryable},
		{"dialect class", msg(fixwire.MsgBusinessMessageReject, map[quickfix.Tag]string{fixwire.TagBizRejReason: "0", fixwire.TagErrorClass: "market_closed"}), broker.ErrMarketClosed},
		{"dialect code", msg(fixwire.MsgReject, map[quickfix.Tag]string{fixwire.TagErrorCode: "10004"}), broker.ErrRetryable},
	} {
		err := refusal(c.m)
		if broker.ClassOf(err) != c.class {
			t.Errorf("%s: %v has class %v, want %v", c.name, err, broker.ClassOf(err), c.class)
		}
	}
	if err := refusal(msg(fixwire.MsgExecutionReport, map[quickfix.Tag]string{fixwire.TagOrdStatus: fixwire.StatusRejected})); err != nil {
		t.Errorf("an execution report is not a refusal of the message: %v", err)
	}
}

// A venue that refuses the OrderStatusRequest (here a session Reject naming its
// MsgSeqNum, as a venue without status requests answers; the simulator's front has no such
// mode, so the Reject is handed to the session as the request is written, before the
// front could answer) says nothing about the order: its outcome stays unknown, never a
// permanent refusal of the order.
func TestRefusedStatusRequestLeavesTheOrderUnknown(t *testing.T) {
	srv := sim.New(sim.Config{Seed: 1, AutoProvision: true})
	f, err := fixfront.Start("127.0.0.1:0", srv, srv, fixfront.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	b, err := New(Config{Addr: f.Addr(), ReplyTimeout: 300 * time.Millisecond, StatusTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var s *session
	refused := 0
	b.wire = func(raw string) { // runs in the caller's goroutine, as the message is written
		if strings.Contains(raw, "\x0135="+fixwire.MsgOrderStatusRequest+"\x01") {
			seq, _ := strconv.Atoi(soh(raw, "34"))
			r := quickfix.NewMessage()
			r.Header.SetString(quickfix.Tag(35), fixwire.MsgReject)
			r.Body.SetInt(fixwire.TagRefSeqNum, seq)
			r.Body.SetString(fixwire.TagText, "Unsupported Message Type")
			_ = s.FromAdmin(r, s.id)
			refused++
		}
	}
	bs, err := b.Connect(t.Context(), broker.Credentials{Login: "nostatus", Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bs.Close() })
	s = bs.(*session)
	specs, err := s.Symbols(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.SetFaults(t.Context(), "nostatus", broker.Faults{TimeoutRate: 1}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Open(t.Context(), broker.OpenRequest{Order: broker.Order{RequestID: uuid.New(), Token: 1}, Symbol: specs[0].Name, Side: broker.Buy, Volume: specs[0].MinLot})
	if refused != 1 || broker.ClassOf(err) != broker.ErrUnknownOutcome {
		t.Fatalf("order whose status request was refused (%d refusals): %v (class %v), want unknown outcome", refused, err, broker.ClassOf(err))
	}
}
