package leasekeeper

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/snapcopier/copier/store"
)

func TestFairShareSpreadsByCapacity(t *testing.T) {
	v := store.ClusterView{Followers: 2000, Nodes: []store.NodeLoad{{ID: "a", Capacity: 1000}, {ID: "b", Capacity: 1000}, {ID: "c", Capacity: 100}, {ID: "d", Capacity: 5000}}}
	want := map[string]int{"a": 634, "b": 633, "c": 100, "d": 633}
	sum := 0
	for id, w := range want {
		if got := FairShare(v, id); got != w {
			t.Errorf("share of %s = %d, want %d", id, got, w)
		}
		sum += want[id]
	}
	if sum != 2000 || FairShare(v, "missing") != 0 {
		t.Fatalf("shares add to %d; a node not in the view got %d", sum, FairShare(v, "missing"))
	}
}

// TestFairSharesCoverEveryFollower: the shares add up to the followers whenever the
// capacities can hold them, none exceeds its node's capacity, and any two differ by at
// most one unless a capacity caps one of them.
func TestFairSharesCoverEveryFollower(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 8).Draw(t, "nodes")
		v := store.ClusterView{Followers: rapid.IntRange(0, 5000).Draw(t, "followers")}
		total := 0
		for i := range n {
			c := rapid.IntRange(0, 3000).Draw(t, "capacity")
			v.Nodes = append(v.Nodes, store.NodeLoad{ID: string(rune('a' + i)), Capacity: c})
			total += c
		}
		sum, lo, hi := 0, 1<<30, 0
		for _, nd := range v.Nodes {
			s := FairShare(v, nd.ID)
			if s < 0 || s > nd.Capacity {
				t.Fatalf("share %d of %s outside [0, %d]", s, nd.ID, nd.Capacity)
			}
			sum += s
			if s < nd.Capacity {
				lo = min(lo, s)
			}
			hi = max(hi, s)
		}
		if want := min(v.Followers, total); sum != want {
			t.Fatalf("shares add to %d, want %d", sum, want)
		}
		if lo < 1<<30 && hi-lo > 1 {
			t.Fatalf("uncapped shares range from %d to %d", lo, hi)
		}
	})
}

func TestHandOffCountHasHysteresisAndNeverShedsBelowTheShare(t *testing.T) {
	for _, c := range []struct{ owned, share, bound, want int }{
		{500, 500, 100, 0},
		{525, 500, 100, 0},  // within the slack (25)
		{526, 500, 100, 26}, // beyond it: down to the share, not to the slack
		{2000, 500, 600, 600},
		{2, 1, 10, 0},
		{3, 1, 10, 2},
		{5, 0, 10, 5},
	} {
		if got := HandOffCount(c.owned, c.share, c.bound); got != c.want {
			t.Errorf("HandOffCount(%d, %d, %d) = %d, want %d", c.owned, c.share, c.bound, got, c.want)
		}
	}
}
