package main

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix"
	"github.com/snapcopier/copier/broker/fix/fixwire"
	"github.com/snapcopier/copier/broker/sim"
	"github.com/snapcopier/copier/broker/sim/fixfront"
	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

// The fix44 position book in the store: a copy opened by one node is read, with its copy
// marker, by the node that takes the account over, which closes it; the old owner's late
// book write is refused.
func TestStoreBookTakeover(t *testing.T) {
	db := storetest.NewDB(t)
	ctx := t.Context()
	if _, err := db.Pool.Exec(ctx, `INSERT INTO trading_accounts (id, platform, role, login) VALUES (1, 'fix', 'follower', 'f1')`); err != nil {
		t.Fatal(err)
	}
	claim := func(node string) int64 {
		t.Helper()
		res, err := store.LeaseCycle(ctx, db.Pool, store.CycleRequest{Node: node, Platform: "fix", Lease: time.Minute, Capacity: 1})
		if err != nil || len(res.Owned) != 1 {
			t.Fatalf("claim by %s: %+v %v", node, res.Owned, err)
		}
		return res.Owned[0].Epoch
	}
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
	syms := make([]fix.Symbol, len(specs))
	for i, sp := range specs {
		syms[i] = fix.Symbol{SymbolSpec: sp, ID: strconv.Itoa(i + 1)}
	}
	sym := specs[0]
	session := func(node string) (broker.Session, storeBook) {
		t.Helper()
		book := storeBook{pool: db.Pool, node: node, platform: "fix"}
		b, err := fix.New(fix.Config{Addr: front.Addr(), Dialect: fixwire.DialectFIX44, Symbols: syms, Book: book, ReconnectMin: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		sess, err := b.Connect(ctx, broker.Credentials{Login: "f1"})
		if err != nil {
			t.Fatal(err)
		}
		return sess, book
	}

	ea := claim("a")
	sa, bookA := session("a")
	res, err := sa.Open(ctx, broker.OpenRequest{Order: broker.Order{RequestID: uuid.New(), Token: ea, Node: "a"}, Symbol: sym.Name, Side: broker.Sell, Volume: 2 * sym.MinLot, Magic: 3, Comment: "mc9"})
	if err != nil {
		t.Fatal(err)
	}
	if err := sa.Close(); err != nil {
		t.Fatal(err)
	}

	if _, err := db.Pool.Exec(ctx, `UPDATE trading_accounts SET lease_until = now() - interval '1 second' WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	eb := claim("b")
	sb, _ := session("b")
	defer func() { _ = sb.Close() }()
	ps, err := sb.Positions(ctx)
	if err != nil || len(ps) != 1 || ps[0].Ticket != res.Ticket || ps[0].Comment != "mc9" || ps[0].Magic != 3 || ps[0].Side != broker.Sell {
		t.Fatalf("the new owner reads %+v (%v), want the copy %d", ps, err, res.Ticket)
	}
	// The old owner's late write (a fill it tracked after losing the account) is refused.
	if err := bookA.Put(ctx, "f1", broker.Order{Token: ea}, fix.BookPosition{Position: broker.Position{Ticket: res.Ticket}}); !errors.Is(err, fix.ErrStaleBookWrite) {
		t.Fatalf("stale owner's write: %v, want ErrStaleBookWrite", err)
	}
	if _, err := sb.ClosePosition(ctx, broker.CloseRequest{Order: broker.Order{RequestID: uuid.New(), Token: eb, Node: "b"}, Ticket: res.Ticket}); err != nil {
		t.Fatal(err)
	}
	if ps, err := sb.Positions(ctx); err != nil || len(ps) != 0 {
		t.Fatalf("after the close: %+v (%v)", ps, err)
	}
}
