package leasekeeper

import (
	"cmp"
	"slices"

	"github.com/snapcopier/copier/store"
)

// FairShare is node's share of the platform's enabled followers: they are spread evenly
// over the live nodes, none above its capacity (water-filling: the smallest capacities are
// served first, and what they cannot take is spread over the rest). Shares are rounded up
// in a fixed order, so they add up to the followers (when the capacities allow) and every
// node computes the same shares from the same view. A node missing from the view gets 0.
func FairShare(v store.ClusterView, node string) int {
	nodes := slices.Clone(v.Nodes)
	slices.SortFunc(nodes, func(a, b store.NodeLoad) int {
		return cmp.Or(cmp.Compare(a.Capacity, b.Capacity), cmp.Compare(a.ID, b.ID))
	})
	left := v.Followers
	for i, n := range nodes {
		share := min(max(n.Capacity, 0), ceilDiv(left, len(nodes)-i))
		if n.ID == node {
			return share
		}
		left -= share
	}
	return 0
}

func ceilDiv(a, b int) int {
	if a <= 0 {
		return 0
	}
	return (a + b - 1) / b
}

// HandOffSlack is how far above its share a node may hold before it hands accounts off
// (5 %, at least one): shares move by one as followers and nodes come and go, and a node
// exactly at the line must not hand off and claim back in turn.
func HandOffSlack(share int) int { return max(1, share/20) }

// HandOffCount is how many accounts a node holding owned should hand back: none while it
// holds at most share + slack; otherwise its surplus over the share (never more: a node
// never sheds below its share), at most bound per cycle.
func HandOffCount(owned, share, bound int) int {
	if owned <= share+HandOffSlack(share) {
		return 0
	}
	return min(owned-share, bound)
}
