package store

import (
	"cmp"
	"slices"
	"testing"
)

func TestLastPerKeyKeepsTheLastRowOfEachKeyInFirstSeenOrder(t *testing.T) {
	type row struct{ key, val int64 }
	key := func(r row) int64 { return r.key }
	got := lastPerKey([]row{{3, 1}, {1, 2}, {3, 3}, {2, 4}, {1, 5}}, key, cmp.Compare[int64])
	want := []row{{3, 3}, {1, 5}, {2, 4}}
	if !slices.Equal(got, want) {
		t.Fatalf("repeated keys: got %v, want %v", got, want)
	}

	unique := []row{{3, 1}, {1, 2}, {2, 3}}
	got = lastPerKey(unique, key, cmp.Compare[int64])
	if !slices.Equal(got, []row{{3, 1}, {1, 2}, {2, 3}}) || &got[0] != &unique[0] {
		t.Fatalf("unique keys: got %v, want the rows as they are", got)
	}

	tickets := []TicketRow{
		{FollowerID: 1, LinkID: 2, MasterTicket: 3, Volume: 1},
		{FollowerID: 1, LinkID: 3, MasterTicket: 3, Volume: 2},
		{FollowerID: 1, LinkID: 2, MasterTicket: 3, Volume: 3},
	}
	got3 := lastPerKey(tickets, func(r TicketRow) [3]int64 { return [3]int64{r.FollowerID, r.LinkID, r.MasterTicket} }, compareKey3)
	if len(got3) != 2 || got3[0].Volume != 3 || got3[1].Volume != 2 {
		t.Fatalf("composite keys: got %+v", got3)
	}
	if got := lastPerKey([]row(nil), key, cmp.Compare[int64]); got != nil {
		t.Fatalf("no rows: got %v", got)
	}
}
