package store_test

import (
	"testing"

	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

// A FIX account's book is written only by its owner at its epoch: after a takeover the old
// owner's write (a fill it tracked late) is refused and the new owner's book stands.
func TestFIXPositionsFenced(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 1)
	a := cycle(t, db.Pool, "a", nil, 1)
	if len(a.Owned) != 1 {
		t.Fatalf("claim: %+v", a.Owned)
	}
	epoch := a.Owned[0].Epoch
	put := func(node string, epoch, ticket int64, doc string) bool {
		t.Helper()
		p := store.FIXPosition{Ticket: ticket}
		if doc != "" {
			p.Position = []byte(doc)
		}
		ok, err := store.PutFIXPositionFenced(ctxT(t), db.Pool, node, epoch, "mt5", "login-1", p)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	read := func() []store.FIXPosition {
		t.Helper()
		ps, err := store.ReadFIXPositions(ctxT(t), db.Pool, "mt5", "login-1")
		if err != nil {
			t.Fatal(err)
		}
		return ps
	}
	if !put("a", epoch, 7, `{"v":1}`) || !put("a", epoch, 8, `{"v":2}`) {
		t.Fatal("the owner's write was refused")
	}
	if put("b", epoch, 9, `{"v":3}`) || put("a", epoch-1, 9, `{"v":3}`) {
		t.Fatal("a write from another node or an older epoch landed")
	}
	if !put("a", epoch, 8, "") {
		t.Fatal("the owner's removal was refused")
	}
	if ps := read(); len(ps) != 1 || ps[0].Ticket != 7 {
		t.Fatalf("book %+v, want ticket 7", ps)
	}

	// Takeover: b reads a's book; a's late write and removal are refused.
	expire(t, db.Pool, 1)
	b := cycle(t, db.Pool, "b", nil, 1)
	if len(b.Owned) != 1 {
		t.Fatalf("takeover: %+v", b.Owned)
	}
	if ps := read(); len(ps) != 1 || ps[0].Ticket != 7 {
		t.Fatalf("the new owner reads %+v, want ticket 7", ps)
	}
	if put("a", epoch, 7, `{"v":"stale"}`) || put("a", epoch, 7, "") {
		t.Fatal("the stale owner's write landed")
	}
	if !put("b", b.Owned[0].Epoch, 7, `{"v":4}`) {
		t.Fatal("the new owner's write was refused")
	}
	if ps := read(); len(ps) != 1 || string(ps[0].Position) != `{"v": 4}` {
		t.Fatalf("book %+v", ps)
	}
}
