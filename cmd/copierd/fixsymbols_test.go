package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix"
	"github.com/snapcopier/copier/broker/fix/fixwire"
	"github.com/snapcopier/copier/broker/sim"
	"github.com/snapcopier/copier/broker/sim/fixfront"
	"github.com/snapcopier/copier/cmd/copierd/console"
	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

// The symbol list a fix44 account trades by, as a node gets it — loaded from the store,
// turned into credentials the way `copierd run` does, connected to a venue that knows only
// standard FIX 4.4 (the strict front): the account's own list first, then its platform's,
// then the node's. Each list calls the venue's symbol 1 by a name of its own, so the names
// a session reports say whose list it has, and an order by the platform's name can only
// reach symbol 1 through the platform's list. A change of the platform's list reaches the
// account when its session is next made.
func TestFIXSymbolListPrecedence(t *testing.T) {
	db := storetest.NewDB(t)
	ctx := t.Context()
	s := sim.New(sim.Config{Seed: 1, AutoProvision: true, DefaultAccount: broker.AccountSpec{Currency: "USD", Balance: 1e5, Leverage: 100, Mode: broker.Netting}})
	front, err := fixfront.Start("127.0.0.1:0", s, s, fixfront.Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = front.Close() })
	ss, err := s.Connect(ctx, broker.Credentials{Login: "symbols-reader"})
	if err != nil {
		t.Fatal(err)
	}
	specs, err := ss.Symbols(ctx)
	_ = ss.Close()
	if err != nil {
		t.Fatal(err)
	}
	node := make([]fix.Symbol, len(specs))
	for i, sp := range specs {
		node[i] = fix.Symbol{SymbolSpec: sp, ID: strconv.Itoa(i + 1)}
	}
	renamed := func(prefix string) []store.FIXSymbol {
		e := node[0].Entry()
		e.Name = prefix + e.Name
		return []store.FIXSymbol{e}
	}
	b, err := fix.New(fix.Config{Addr: front.Addr(), Dialect: fixwire.DialectFIX44, Symbols: node, ReconnectMin: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}

	for _, a := range []store.Account{
		{ID: 1, Platform: "fixv", Role: store.RoleFollower, Enabled: true, Login: "own", FIX: store.FIXSession{Symbols: renamed("ACC-")}},
		{ID: 2, Platform: "fixv", Role: store.RoleFollower, Enabled: true, Login: "plat"},
		{ID: 3, Platform: "other", Role: store.RoleFollower, Enabled: true, Login: "node"},
	} {
		if err := store.CreateAccount(ctx, db.Pool, a); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.SetPlatformSymbols(ctx, db.Pool, "fixv", renamed("PLAT-")); err != nil {
		t.Fatal(err)
	}
	creds := console.CredentialsFunc(nil)
	// sessions loads the three accounts as a node does and returns the symbol names each
	// session reports, and account 2's session (open, for an order).
	sessions := func() (map[int64]string, broker.Session) {
		t.Helper()
		loads, err := store.LoadFollowers(ctx, db.Pool, []store.LoadRequest{{ID: 1}, {ID: 2}, {ID: 3}})
		if err != nil {
			t.Fatal(err)
		}
		names := map[int64]string{}
		var plat broker.Session
		for _, l := range loads {
			c, err := creds(l.Config.Account)
			if err != nil {
				t.Fatal(err)
			}
			sess, err := b.Connect(ctx, c)
			if err != nil {
				t.Fatalf("account %d: %v", l.Config.Account.ID, err)
			}
			got, err := sess.Symbols(ctx)
			if err != nil {
				t.Fatalf("account %d: symbols: %v", l.Config.Account.ID, err)
			}
			var n []string
			for _, sp := range got {
				n = append(n, sp.Name)
			}
			names[l.Config.Account.ID] = strings.Join(n, ",")
			if l.Config.Account.ID == 2 {
				plat = sess
				t.Cleanup(func() { _ = sess.Close() })
			} else {
				_ = sess.Close()
			}
		}
		return names, plat
	}
	var nodeNames []string
	for _, sy := range node {
		nodeNames = append(nodeNames, sy.Name)
	}
	names, plat := sessions()
	want := map[int64]string{1: "ACC-" + node[0].Name, 2: "PLAT-" + node[0].Name, 3: strings.Join(nodeNames, ",")}
	for id, w := range want {
		if names[id] != w {
			t.Errorf("account %d trades by %q, want %q", id, names[id], w)
		}
	}
	res, err := plat.Open(ctx, broker.OpenRequest{Order: broker.Order{RequestID: uuid.New(), Token: 1, Node: "n"}, Symbol: "PLAT-" + node[0].Name, Side: broker.Buy, Volume: node[0].MinLot})
	if err != nil || res.Volume != node[0].MinLot {
		t.Fatalf("open by the platform's name against a strict venue: %+v %v", res, err)
	}
	log, err := s.OrderLog(ctx, 0, 0)
	if err != nil || len(log) != 1 || log[0].Login != "plat" || log[0].Symbol != node[0].Name || !log[0].Executed {
		t.Fatalf("order log %+v (%v): want one executed %s order of plat", log, err, node[0].Name)
	}

	// The platform's list changes: account 2's next session trades by the new one; the
	// others keep theirs. Removed, account 2 falls back to the node's.
	if err := store.SetPlatformSymbols(ctx, db.Pool, "fixv", renamed("PLAT2-")); err != nil {
		t.Fatal(err)
	}
	if names, _ := sessions(); names[2] != "PLAT2-"+node[0].Name || names[1] != want[1] || names[3] != want[3] {
		t.Fatalf("after the platform's list changed: %v", names)
	}
	if err := store.SetPlatformSymbols(ctx, db.Pool, "fixv", nil); err != nil {
		t.Fatal(err)
	}
	if names, _ := sessions(); names[2] != want[3] {
		t.Fatalf("after the platform's list was removed, account 2 trades by %q, want the node's %q", names[2], want[3])
	}
}
