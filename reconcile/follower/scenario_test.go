package follower

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile"
)

// TestScenarios runs the scenario files of testdata/: each command steps one input into
// one Core and prints the whole Ready it returns, so a change in any field shows. The
// command language is described at the top of each file. After a deliberate change,
// rewrite the expected output and read the diff:
//
//	go test ./reconcile/follower -run TestScenarios -rewrite
func TestScenarios(t *testing.T) {
	for _, file := range []string{"event_stream.txt", "order_errors.txt"} {
		t.Run(strings.TrimSuffix(file, ".txt"), func(t *testing.T) {
			var s *scenario
			datadriven.RunTest(t, "testdata/"+file, func(t *testing.T, td *datadriven.TestData) string {
				if td.Cmd == "new" {
					s = newScenario(t, td)
					return ""
				}
				if s == nil {
					td.Fatalf(t, "%s: the first command is new", td.Cmd)
				}
				return s.step(t, td)
			})
		})
	}
}

// scenario is one Core with a clock (one millisecond per input) and a lease switch.
// Follower 1 has link 1 (magic 1001) from master 100, and with master=200 in new also
// link 2 (magic 1002) from master 200.
type scenario struct {
	c     *Core
	now   time.Time
	lease bool
	two   bool // link 2 from master 200 too
	// sending: the last Ready asked for an order, whose outcome is to be stepped next.
	sending bool
}

func newScenario(t *testing.T, td *datadriven.TestData) *scenario {
	var opt Options
	if td.HasArg("every") {
		var every string
		td.ScanArgs(t, "every", &every)
		opt.ReconcileEvery = parseDuration(t, td, every)
	}
	return &scenario{c: New(opt), now: t0, lease: true, two: td.HasArg("two")}
}

func (s *scenario) at() At {
	s.now = s.now.Add(time.Millisecond)
	return At{Now: s.now, Lease: s.lease}
}

func (s *scenario) config(version int64) Config {
	cfg := config(version, "")
	if s.two {
		cfg.Links = append(cfg.Links, LinkConfig{ID: 2, MasterID: 200, Magic: 1002, Settings: []byte("{}"), MasterEnabled: true})
	}
	return cfg
}

func (s *scenario) step(t *testing.T, td *datadriven.TestData) string {
	intArg := func(key string, def int64) int64 {
		if td.HasArg(key) {
			var v int64
			td.ScanArgs(t, key, &v)
			return v
		}
		return def
	}
	if (td.Cmd == "filled" || td.Cmd == "failed" || td.Cmd == "dropped") && !s.sending {
		td.Fatalf(t, "%s: no order in flight", td.Cmd)
	}
	var rd *Ready
	switch td.Cmd {
	case "start":
		rd = s.c.Start(Status{})
	case "load":
		in := Loaded{Config: s.config(intArg("version", 1)), WithTickets: td.HasArg("first")}
		if td.HasArg("drawdown") {
			in.Protection.Limits = fmt.Appendf(nil, `{"max_drawdown":{"percent":%d}}`, intArg("drawdown", 0))
		}
		rd = s.c.Loaded(s.at(), in)
	case "load-failed":
		rd = s.c.LoadFailed(errors.New("database away"))
	case "retry-load":
		rd = s.c.RetryLoad()
	case "config":
		rd = s.c.ConfigChanged(intArg("version", 0))
	case "attach":
		rd = s.c.MasterAttached(s.at(), intArg("master", 100), td.HasArg("restart"), intArg("epoch", 0), intArg("seq", 0), ServerClock{})
	case "token":
		rd = s.c.TokenDone(s.at().Now, s.errArg(t, td), td.HasArg("dropped"))
	case "event":
		kind := broker.Opened
		if td.HasArg("kind") {
			var k string
			td.ScanArgs(t, "kind", &k)
			kind = map[string]broker.EventKind{"opened": broker.Opened, "closed": broker.Closed, "modified": broker.Modified}[k]
		}
		p := broker.Position{Ticket: intArg("ticket", 500), Symbol: "EURUSD", Side: broker.Buy, Volume: 1, OpenPrice: 1.1, OpenTime: s.now}
		ev := &broker.Event{Kind: kind, Epoch: intArg("epoch", 1), Seq: intArg("seq", 0), Position: p, ServerTime: s.now}
		if td.HasArg("behind") {
			rd = s.c.EventBehind(s.at(), intArg("master", 100), ev, s.now)
		} else {
			rd = s.c.Event(s.at(), intArg("master", 100), ev, s.now)
		}
	case "flush":
		rd = s.c.FlushEvents(s.at())
	case "reconciled":
		r := &Reconciled{Follower: state("f", broker.Hedging), Masters: map[int64]reconcile.AccountState{100: state("m", broker.Hedging)}}
		if s.two {
			r.Masters[200] = state("m2", broker.Hedging)
		}
		r.Follower.Info.Equity = float64(intArg("equity", 10_000))
		if td.HasArg("plan") {
			var tickets []string
			td.ScanArgs(t, "plan", &tickets)
			r.Plans = map[int64]reconcile.Result{}
			for _, mt := range tickets {
				var link, ticket int64
				if _, err := fmt.Sscanf(mt, "%d:%d", &link, &ticket); err != nil {
					td.Fatalf(t, "plan entry %q: want link:masterTicket", mt)
				}
				p := r.Plans[link]
				p.Actions = append(p.Actions, reconcile.Action{Kind: reconcile.Open, Symbol: "EURUSD", Side: broker.Buy, Volume: 1,
					MasterTicket: ticket, Magic: 1000 + link, Comment: fmt.Sprintf("mc%d", ticket), Reason: reconcile.ReasonCopyMissing,
					Track: []reconcile.Tracked{{MasterTicket: ticket, Ratio: 1}}})
				r.Plans[link] = p
			}
		}
		if td.HasArg("err") {
			r.Err = errors.New("fetch failed")
		}
		rd = s.c.Reconciled(s.at(), r)
	case "filled":
		a := s.c.order.Action
		rd = s.c.OrderDone(s.at(), OrderOutcome{Result: broker.OrderResult{Ticket: intArg("ticket", 0), Volume: a.Volume, Price: 1.1001, ServerTime: s.now}, SentAt: s.now})
	case "failed":
		rd = s.c.OrderDone(s.at(), OrderOutcome{Err: s.errArg(t, td), SentAt: s.now})
	case "dropped":
		rd = s.c.OrderDone(s.at(), OrderOutcome{Dropped: true})
	case "resend":
		rd = s.c.ResendDue(s.at())
	case "tick":
		rd = s.c.Tick(s.at())
	case "turn":
		rd = s.c.RepairTurn(s.at())
	case "repair":
		rd = s.c.RepairDue(s.at())
	case "equity":
		if td.HasArg("err") {
			rd = s.c.EquityFailed(errors.New("read timed out"))
		} else {
			eq := float64(intArg("value", 10_000))
			rd = s.c.EquityRead(s.at(), broker.AccountInfo{Balance: 10_000, Equity: eq})
		}
	case "lease":
		s.lease = td.HasArg("held")
		return ""
	case "advance":
		var d string
		td.ScanArgs(t, "by", &d)
		s.now = s.now.Add(parseDuration(t, td, d))
		return ""
	case "stop":
		rd = s.c.Stop()
	default:
		td.Fatalf(t, "unknown command %q", td.Cmd)
	}
	s.sending = rd.Send != nil
	return s.print(rd)
}

// errors by the names the files use.
var scenarioErrors = map[string]error{
	"requote":      broker.NewError(broker.ErrRetryable, broker.CodeRequote, "requote"),
	"timeout":      broker.NewError(broker.ErrUnknownOutcome, broker.CodeTimeout, "timeout"),
	"closed":       broker.NewError(broker.ErrMarketClosed, broker.CodeMarketClosed, "market closed"),
	"fenced":       broker.NewError(broker.ErrFenced, broker.CodeFencedToken, "stale token"),
	"expired":      broker.NewError(broker.ErrExpired, broker.CodeExpired, "late"),
	"permanent":    broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "no money"),
	"disconnected": broker.NewError(broker.ErrDisconnected, broker.CodeNoConnection, "no connection"),
	"reset":        errors.New("connection reset"),
}

func (s *scenario) errArg(t *testing.T, td *datadriven.TestData) error {
	if !td.HasArg("err") {
		return nil
	}
	var name string
	td.ScanArgs(t, "err", &name)
	err, ok := scenarioErrors[name]
	if !ok {
		td.Fatalf(t, "unknown error %q", name)
	}
	return err
}

func parseDuration(t *testing.T, td *datadriven.TestData, s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		td.Fatalf(t, "%v", err)
	}
	return d
}

// print writes every field of rd that is set, one a line, in the order of the struct, and
// the status when it changed. Times are printed as offsets from the scenario's start.
func (s *scenario) print(rd *Ready) string {
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	if o := rd.Send; o != nil {
		origin := "plan"
		if o.Origin != nil {
			origin = "event"
		}
		line("send: link %d attempt %d (%s): %s", o.Link, o.Attempt, origin, o.Action)
	}
	if rd.RaiseToken {
		line("raise token")
	}
	if rd.ReadPositions {
		line("read positions")
	}
	if l := rd.Load; l != nil {
		line("load: tickets=%v connect=%v", l.Tickets, l.Connect)
	}
	if rd.RetryLoadIn > 0 {
		line("retry load in %v", rd.RetryLoadIn)
	}
	if rd.ResendIn > 0 {
		line("resend in %v", rd.ResendIn)
	}
	if a := rd.Reconcile; a != nil {
		line("reconcile: %s masters %v", a.Cause, a.Masters)
		for _, l := range a.Links {
			var tm []string
			for _, e := range l.TicketMap {
				tm = append(tm, fmt.Sprintf("%d→%d", e.MasterTicket, e.FollowerTicket))
			}
			line("  link %d of master %d: close-only %q, tickets [%s]", l.Link.ID, l.MasterID, l.Link.Settings.Protect.CloseOnly, strings.Join(tm, " "))
		}
	}
	if rd.WantRepair {
		line("want repair turn")
	}
	if rd.Expedite {
		line("expedite")
	}
	if rd.FlushEvents {
		line("flush events")
	}
	if rd.Repair {
		line("repair in %v", rd.RepairIn)
	}
	if rd.MastersChanged {
		line("masters %v", rd.Masters)
	}
	if rd.Fence {
		line("fence")
	}
	if rd.WatchEquity {
		line("watch equity")
	}
	for _, tc := range rd.Tickets {
		closed := ""
		if !tc.ClosedAt.IsZero() {
			closed = " closed at " + s.offset(tc.ClosedAt)
		}
		line("ticket: link %d %d→%d vol %v%s", tc.Entry.LinkID, tc.Entry.MasterTicket, tc.Entry.FollowerTicket, tc.Entry.Volume, closed)
	}
	for _, p := range rd.Protection {
		line("protection: scope %d gen %d %s", p.Scope, p.ResetGen, p.State)
	}
	for _, j := range rd.Journal {
		line("journal: %s link %d master %d ticket %d: %s latency %v quality %v", s.offset(j.Time), j.Link, j.MasterTicket, j.Ticket, j.Result, j.Latency, j.HasQuality)
		line("  %s", j.Action())
	}
	for _, n := range rd.Notes {
		line("note: %s", s.note(&n))
	}
	if rd.StatusChanged {
		st := s.c.Status()
		line("status: %s reconciles %d dropped %d error %q stop-out %q", st.Phase, st.Reconciles, st.Dropped, st.LastError, st.StopOut)
	}
	if rd.WriteStatus {
		line("write status")
	}
	return b.String()
}

func (s *scenario) offset(at time.Time) string { return "+" + at.Sub(t0).String() }

func (s *scenario) note(n *Note) string {
	var b strings.Builder
	b.WriteString(n.Kind.String())
	field := func(format string, args ...any) { fmt.Fprintf(&b, " "+format, args...) }
	if n.Cause != CauseNone {
		field("cause=%s", n.Cause)
	}
	if n.Failure != FailNone {
		field("failure=%s", n.Failure)
	}
	if n.Err != nil {
		field("err=%q", n.Err)
	}
	if n.Master != 0 {
		field("master=%d", n.Master)
	}
	if n.Link != 0 {
		field("link=%d", n.Link)
	}
	if n.Version != 0 {
		field("version=%d links=%d", n.Version, n.Links)
	}
	if n.Restarted {
		field("restarted")
	}
	if n.Idle {
		field("idle")
	}
	if n.Action != nil {
		field("action=%q", n.Action.String())
	}
	if n.Stop != nil {
		field("stop=%s equity=%v loss=%v", n.Stop.Reason, n.Stop.Equity, n.Stop.Loss)
	}
	return b.String()
}
