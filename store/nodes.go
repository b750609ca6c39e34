package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// NodeLoad is one live node of a platform as its last cycle recorded it.
type NodeLoad struct {
	ID       string
	Capacity int
	Owned    int
}

// ClusterView is what a lease cycle sees of its platform: the enabled followers to spread
// and the live nodes (this one included, with what it holds after its renewal), by id.
type ClusterView struct {
	Followers int
	Nodes     []NodeLoad
}

// readView reads the platform's live nodes other than req.Node (live: their last cycle
// was less than their lease ago, by the database's clock), and adds this node with owned
// accounts to them and the platform's enabled followers (platformScan).
func readView(ctx context.Context, tx pgx.Tx, req CycleRequest, owned, followers int) (ClusterView, error) {
	v := ClusterView{Followers: followers}
	rows, err := tx.Query(ctx, `SELECT node_id, capacity, owned FROM copier_nodes
		WHERE platform = $1 AND node_id <> $2 AND last_cycle + lease > now() ORDER BY node_id`, req.Platform, req.Node)
	if err != nil {
		return v, fmt.Errorf("live nodes: %w", err)
	}
	v.Nodes, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (NodeLoad, error) {
		var n NodeLoad
		err := row.Scan(&n.ID, &n.Capacity, &n.Owned)
		return n, err
	})
	if err != nil {
		return v, fmt.Errorf("live nodes: %w", err)
	}
	self := NodeLoad{ID: req.Node, Capacity: claimCapacity(req), Owned: owned}
	i := 0
	for i < len(v.Nodes) && v.Nodes[i].ID < self.ID {
		i++
	}
	v.Nodes = append(v.Nodes[:i], append([]NodeLoad{self}, v.Nodes[i:]...)...)
	return v, nil
}

// claimCapacity is the capacity a node offers its platform: none while it does not claim
// (draining, claiming paused), so that the others' shares cover every follower.
func claimCapacity(req CycleRequest) int {
	if req.NoClaim {
		return 0
	}
	return req.Capacity
}

// recordNode upserts this node's row: it is live for one lease from now.
func recordNode(ctx context.Context, tx pgx.Tx, req CycleRequest, owned, share int) error {
	_, err := tx.Exec(ctx, `
		INSERT INTO copier_nodes (node_id, platform, capacity, owned, share, lease, last_cycle)
		VALUES ($1, $2, $3, $4, $5, make_interval(secs => $6), now())
		ON CONFLICT (node_id) DO UPDATE SET platform = EXCLUDED.platform, capacity = EXCLUDED.capacity,
			owned = EXCLUDED.owned, share = EXCLUDED.share, lease = EXCLUDED.lease, last_cycle = EXCLUDED.last_cycle`,
		req.Node, req.Platform, claimCapacity(req), owned, share, req.Lease.Seconds())
	if err != nil {
		return fmt.Errorf("record node: %w", err)
	}
	return nil
}

// forgetNode deletes a node's row when it leaves cleanly: the others' shares grow at once.
func forgetNode(ctx context.Context, tx pgx.Tx, node string) error {
	if _, err := tx.Exec(ctx, `DELETE FROM copier_nodes WHERE node_id = $1`, node); err != nil {
		return fmt.Errorf("forget node: %w", err)
	}
	return nil
}

// LiveNode is one node of the cluster for consoles and metrics.
type LiveNode struct {
	ID        string
	Platform  string
	Capacity  int
	Owned     int
	Share     int
	HandOffs  int64
	LastCycle time.Time
	Age       time.Duration // since its last cycle, by the database's clock
}

// LiveNodes returns every live node of every platform, by platform and id.
func LiveNodes(ctx context.Context, pool *pgxpool.Pool) ([]LiveNode, error) {
	rows, err := pool.Query(ctx, `SELECT node_id, platform, capacity, owned, share, handoffs, last_cycle,
			extract(epoch FROM now() - last_cycle)::float8
		FROM copier_nodes WHERE last_cycle + lease > now() ORDER BY platform, node_id`)
	if err != nil {
		return nil, fmt.Errorf("store: live nodes: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (LiveNode, error) {
		var n LiveNode
		var age float64
		err := row.Scan(&n.ID, &n.Platform, &n.Capacity, &n.Owned, &n.Share, &n.HandOffs, &n.LastCycle, &age)
		n.Age = time.Duration(age * float64(time.Second))
		return n, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: live nodes: %w", err)
	}
	return out, nil
}
