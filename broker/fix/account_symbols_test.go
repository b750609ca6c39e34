package fix_test

import (
	"math"
	"strings"
	"testing"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix"
	"github.com/snapcopier/copier/broker/fix/fixwire"
	"github.com/snapcopier/copier/broker/sim"
	"github.com/snapcopier/copier/broker/sim/fixfront"
)

// An account's own symbol list (Credentials.FIX.Symbols): a fix44 account trades by it
// against a venue that knows only standard FIX 4.4 (no SecurityList) on a node that has no
// list; on a node that has one, the account's comes first. A list that cannot be traded is
// refused at Connect, naming the setting, before anything is sent.
func TestAccountSymbolList(t *testing.T) {
	s := sim.New(sim.Config{Seed: 1, AutoProvision: true})
	e := newEnvFor(t, s, envOptions{front: fixfront.Options{Strict: true}}) // the node: ctrader, no list
	venue := simSymbols(t, s)
	ctx := t.Context()

	// The account calls the venue's symbol 1 by a name of its own: an order by that name
	// can only have reached symbol 1 through the account's list.
	own := venue[0]
	own.Name = "ACC-" + own.Name
	creds := broker.Credentials{Login: "own-list", Password: "pw", FIX: broker.FIXSession{Dialect: "fix44", Symbols: []fix.Symbol{own}}}
	sess, err := e.broker.Connect(ctx, creds)
	if err != nil {
		t.Fatalf("connect a fix44 account with its own list on a node without one: %v", err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	specs, err := sess.Symbols(ctx)
	if err != nil || len(specs) != 1 || specs[0].Name != own.Name || specs[0].Point != math.Pow10(-own.Digits) || !specs[0].TradeAllowed {
		t.Fatalf("symbols %+v (%v), want the account's one symbol %q", specs, err, own.Name)
	}
	res, err := sess.Open(ctx, broker.OpenRequest{Order: order(), Symbol: own.Name, Side: broker.Buy, Volume: own.MinLot})
	if err != nil {
		t.Fatalf("open by the account's list against a strict venue: %v", err)
	}
	if res.Volume != own.MinLot || res.Price <= 0 {
		t.Fatalf("fill %+v, want %v lots at a price", res, own.MinLot)
	}
	log, err := s.OrderLog(ctx, 0, 0)
	if err != nil || len(log) != 1 || log[0].Login != "own-list" || log[0].Symbol != venue[0].Name || !log[0].Executed {
		t.Fatalf("order log %+v (%v): want one executed %s order of own-list", log, err, venue[0].Name)
	}

	// A node with a list of its own: the account's list still comes first, and an account
	// without one gets the node's.
	b2, err := fix.New(fix.Config{Addr: e.front.Addr(), Dialect: fixwire.DialectFIX44, Symbols: venue})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		creds broker.Credentials
		want  []string
	}{
		{broker.Credentials{Login: "own-list-2", Password: "pw", FIX: broker.FIXSession{Symbols: []fix.Symbol{own}}}, []string{own.Name}},
		{broker.Credentials{Login: "node-list", Password: "pw"}, nil},
	} {
		ss, err := b2.Connect(ctx, c.creds)
		if err != nil {
			t.Fatalf("%s: %v", c.creds.Login, err)
		}
		specs, err := ss.Symbols(ctx)
		_ = ss.Close()
		if err != nil {
			t.Fatalf("%s: symbols: %v", c.creds.Login, err)
		}
		var names []string
		for _, sp := range specs {
			names = append(names, sp.Name)
		}
		want := c.want
		if want == nil {
			for _, sy := range venue {
				want = append(want, sy.Name)
			}
		}
		if strings.Join(names, ",") != strings.Join(want, ",") {
			t.Errorf("%s: symbols %v, want %v", c.creds.Login, names, want)
		}
	}

	logons := len(e.front.Logons())
	bad := own
	bad.LotStep = 0
	for _, c := range []struct {
		fix  broker.FIXSession
		want string
	}{
		{broker.FIXSession{Dialect: "fix44", Symbols: []fix.Symbol{bad}}, "account FIX setting symbols: configured symbol 1"},
		{broker.FIXSession{Dialect: "fix44", Symbols: []fix.Symbol{own, own}}, "listed twice"},
		{broker.FIXSession{Dialect: "fix44"}, "configure the venue's symbols"},
	} {
		_, err := e.broker.Connect(ctx, broker.Credentials{Login: "refused", Password: "pw", FIX: c.fix})
		wantClass(t, err, broker.ErrPermanent)
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.fix, err, c.want)
		}
	}
	if n := len(e.front.Logons()); n != logons {
		t.Fatalf("%d logons for refused configurations, want none", n-logons)
	}
}
