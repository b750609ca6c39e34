package follower

import (
	"slices"
	"testing"

	"github.com/snapcopier/copier/reconcile"
)

// TestTicketMapIsCopiedOnWrite: a link's ticket map holds one entry per master ticket,
// sorted by it (the last stored row of a repeated ticket wins), and a change replaces the
// link's slice: one already handed to a plan or a reconcile's ask stays as it was.
func TestTicketMapIsCopiedOnWrite(t *testing.T) {
	e := func(link, master, follower int64) reconcile.TicketMapEntry {
		return reconcile.TicketMapEntry{LinkID: link, MasterTicket: master, FollowerTicket: follower, Volume: 1}
	}
	c := New(Options{})
	c.tickets = ticketsByLink([]reconcile.TicketMapEntry{e(1, 5, 50), e(2, 9, 90), e(1, 3, 30), e(1, 5, 51), e(1, 5, 52)})
	if got, want := c.ticketMap(1), []reconcile.TicketMapEntry{e(1, 3, 30), e(1, 5, 52)}; !slices.Equal(got, want) {
		t.Fatalf("link 1 loaded as %v, want %v", got, want)
	}
	if got, want := c.ticketMap(2), []reconcile.TicketMapEntry{e(2, 9, 90)}; !slices.Equal(got, want) {
		t.Fatalf("link 2 loaded as %v, want %v", got, want)
	}

	for _, change := range []func(){
		func() { c.setTicket(e(1, 5, 53)) }, // replaced
		func() { c.setTicket(e(1, 4, 40)) }, // inserted between
		func() { c.unsetTicket(1, 3) },      // dropped
		func() { c.unsetTicket(1, 7) },      // not there: nothing
	} {
		handed := c.ticketMap(1)
		before := slices.Clone(handed)
		change()
		if !slices.Equal(handed, before) {
			t.Fatalf("the slice handed out changed to %v, was %v", handed, before)
		}
	}
	if got, want := c.ticketMap(1), []reconcile.TicketMapEntry{e(1, 4, 40), e(1, 5, 53)}; !slices.Equal(got, want) {
		t.Fatalf("link 1 is %v, want %v", got, want)
	}
	c.unsetTicket(2, 9)
	if got := c.ticketMap(2); len(got) != 0 {
		t.Fatalf("link 2 is %v after its only entry was dropped", got)
	}
}
