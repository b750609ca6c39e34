package actors_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/broker"
)

// TestCopyQualityOnTheEventPath: an open copied from the master's event is journalled with
// its latency split (the parts add up to the journalled latency) and its slippage, counted
// in the histograms and summarised for its link.
func TestCopyQualityOnTheEventPath(t *testing.T) {
	c := newCluster(t, 1, 1)
	f := c.followers[0]
	mark := c.signals.Len()
	n := c.start("n1", 10, nil)
	c.awaitIdle("follower idle", mark, []int64{f})
	c.masterOpen(1, "EURUSD", broker.Buy, 0.5, 0, 0)
	var got actors.JournalEntry
	var status actors.AccountStatus
	c.eventually("the copy journalled with its quality", 30*time.Second, func() (bool, string) {
		for _, a := range n.Snapshot().Accounts {
			if a.ID != f {
				continue
			}
			for _, e := range a.Journal {
				if e.Result == "ok" && e.HasQuality {
					got, status = e, a
					return true, ""
				}
			}
			return false, fmt.Sprintf("journal %+v", a.Journal)
		}
		return false, "not owned"
	})
	q := got.Quality
	if q.Feed+q.Node+q.Broker != got.Latency || got.Latency <= 0 {
		t.Fatalf("parts %v + %v + %v ≠ latency %v", q.Feed, q.Node, q.Broker, got.Latency)
	}
	if q.Node < 0 || !q.HasSlippage || got.Link == 0 {
		t.Fatalf("quality %+v, link %d", q, got.Link)
	}
	if len(status.Quality) != 1 || status.Quality[0].Link != got.Link || status.Quality[0].Copies != 1 || status.Quality[0].SlippageSamples != 1 {
		t.Fatalf("link summary %+v", status.Quality)
	}
	feed, node, brk := n.Metrics().CopyLatencyParts()
	if feed.Count != 1 || node.Count != 1 || brk.Count != 1 || n.Metrics().Slippage().Count != 1 {
		t.Fatalf("histogram counts %d %d %d %d", feed.Count, node.Count, brk.Count, n.Metrics().Slippage().Count)
	}
}
