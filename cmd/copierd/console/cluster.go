package console

import (
	"context"
	"net/http"
	"time"

	"github.com/snapcopier/copier/store"
)

// clusterJSON is GET /api/cluster.
type clusterJSON struct {
	// DBTime is the database's now(): lease times are by this clock.
	DBTime time.Time        `json:"db_time"`
	Nodes  []nodeLeasesJSON `json:"nodes"`
	// LiveNodes are the nodes whose last lease cycle is younger than their lease, with
	// their fair share and hand-offs (issue 12: a node holding more than its share plus a
	// slack hands the surplus back).
	LiveNodes []liveNodeJSON `json:"live_nodes"`
	Totals    totalsJSON     `json:"totals"`
	// ThisNode is the node embedded in this process (null when none).
	ThisNode *nodeJSON `json:"this_node"`
}

// nodeLeasesJSON is one node as the database sees it (trading_accounts grouped by node_id).
type nodeLeasesJSON struct {
	NodeID              string    `json:"node_id"`
	Platforms           []string  `json:"platforms"`
	Accounts            int       `json:"accounts"`
	Live                int       `json:"live_leases"`
	EarliestLeaseUntil  time.Time `json:"earliest_lease_until"`
	LatestLeaseUntil    time.Time `json:"latest_lease_until"`
	EarliestLeftSeconds float64   `json:"earliest_left_seconds"`
	LatestLeftSeconds   float64   `json:"latest_left_seconds"`
	ThisProcess         bool      `json:"this_process"`
}

// liveNodeJSON is one live node as its last lease cycle recorded it.
type liveNodeJSON struct {
	NodeID      string    `json:"node_id"`
	Platform    string    `json:"platform"`
	Capacity    int       `json:"capacity"`
	Owned       int       `json:"owned"`
	Share       int       `json:"share"`
	HandOffs    int64     `json:"handoffs"`
	LastCycle   time.Time `json:"last_cycle"`
	AgeSeconds  float64   `json:"age_seconds"`
	ThisProcess bool      `json:"this_process"`
}

type totalsJSON struct {
	Masters   int `json:"masters"`
	Followers int `json:"followers"`
	Disabled  int `json:"disabled"`
	Unowned   int `json:"unowned_followers"`
	Errors    int `json:"with_errors"`
}

// clusterView is the cluster page's data.
type clusterView struct {
	Live   []liveNodeJSON
	Nodes  []nodeLeasesJSON
	Totals store.AccountTotals
	Node   *nodeJSON
}

func (s *Server) loadCluster(ctx context.Context) (clusterView, error) {
	nodes, tot, err := store.ClusterLeases(ctx, s.opts.Pool)
	if err != nil {
		return clusterView{}, err
	}
	v := clusterView{Totals: tot, Live: []liveNodeJSON{}}
	v.Node, _ = s.nodeView()
	live, err := store.LiveNodes(ctx, s.opts.Pool)
	if err != nil {
		return clusterView{}, err
	}
	for _, n := range live {
		v.Live = append(v.Live, liveNodeJSON{NodeID: n.ID, Platform: n.Platform, Capacity: n.Capacity, Owned: n.Owned, Share: n.Share,
			HandOffs: n.HandOffs, LastCycle: n.LastCycle, AgeSeconds: n.Age.Seconds(), ThisProcess: v.Node != nil && v.Node.NodeID == n.ID})
	}
	for _, n := range nodes {
		v.Nodes = append(v.Nodes, nodeLeasesJSON{NodeID: n.NodeID, Platforms: n.Platforms, Accounts: n.Accounts, Live: n.Live,
			EarliestLeaseUntil: n.Earliest, LatestLeaseUntil: n.Latest,
			EarliestLeftSeconds: n.EarliestLeft.Seconds(), LatestLeftSeconds: n.LatestLeft.Seconds(),
			ThisProcess: v.Node != nil && v.Node.NodeID == n.NodeID})
	}
	return v, nil
}

// clusterPage serves GET /.
func (s *Server) clusterPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := reqCtx(r)
	defer cancel()
	v, err := s.loadCluster(ctx)
	if err != nil {
		status, msg := s.storeFailure(err, "the cluster")
		s.refuse(w, r, status, msg)
		return
	}
	s.renderPage(w, r, http.StatusOK, "cluster", "Cluster", "cluster", v)
}

// apiCluster serves GET /api/cluster.
func (s *Server) apiCluster(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := reqCtx(r)
	defer cancel()
	v, err := s.loadCluster(ctx)
	if err != nil {
		status, msg := s.storeFailure(err, "the cluster")
		writeError(w, status, msg)
		return
	}
	out := clusterJSON{DBTime: v.Totals.DBTime, Nodes: v.Nodes, LiveNodes: v.Live, ThisNode: v.Node, Totals: totalsJSON{
		Masters: v.Totals.Masters, Followers: v.Totals.Followers, Disabled: v.Totals.Disabled, Unowned: v.Totals.Unowned, Errors: v.Totals.Errors}}
	if out.Nodes == nil {
		out.Nodes = []nodeLeasesJSON{}
	}
	writeJSON(w, http.StatusOK, out)
}
