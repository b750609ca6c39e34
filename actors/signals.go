package actors

import "github.com/snapcopier/copier/leasekeeper"

// SignalKind names one step of an AccountActor that Deps.Observe reports.
type SignalKind int8

// Signal kinds.
const (
	// SignalLoaded: the account loaded its configuration (ConfigVersion, Links).
	SignalLoaded SignalKind = iota + 1
	// SignalFeedAttached: the account is attached to a master's feed (Master); Restarted
	// when the feed came back after a drop.
	SignalFeedAttached
	// SignalReconcileStarted: a reconcile was asked for (Cause).
	SignalReconcileStarted
	// SignalReconcileDone: a reconcile's plan was carried out (Cause, Err); Idle when no
	// further reconcile is running or due.
	SignalReconcileDone
	// SignalCycle: the node's lease cycle ended (Err, Claimed, Owned); Account is 0.
	SignalCycle
	// SignalStopOut: a protection stopped the follower out (Cause: the reason; Link: the
	// link whose limits were breached, 0 for the follower's own).
	SignalStopOut
	// SignalPruned: the node's turn of the ticket history prune ended (Pruned rows
	// deleted, Err); Account is 0.
	SignalPruned
)

// String names the kind.
func (k SignalKind) String() string {
	switch k {
	case SignalLoaded:
		return "loaded"
	case SignalFeedAttached:
		return "feed_attached"
	case SignalReconcileStarted:
		return "reconcile_started"
	case SignalReconcileDone:
		return "reconcile_done"
	case SignalCycle:
		return "cycle"
	case SignalStopOut:
		return "stop_out"
	case SignalPruned:
		return "pruned"
	}
	return "unknown"
}

// Signal is one step an AccountActor took. Embedders can keep an audit trail of them;
// the tests wait on them instead of polling snapshots.
type Signal struct {
	Kind          SignalKind
	Node          string
	Account       int64
	Epoch         int64
	ConfigVersion int64               // SignalLoaded
	Links         int                 // SignalLoaded: enabled links with valid settings
	Master        int64               // SignalFeedAttached
	Restarted     bool                // SignalFeedAttached
	Cause         string              // SignalReconcileStarted, SignalReconcileDone
	Err           error               // SignalReconcileDone, SignalCycle, SignalPruned
	Idle          bool                // SignalReconcileDone
	Claimed       int                 // SignalCycle
	Owned         int                 // SignalCycle
	Trigger       leasekeeper.Trigger // SignalCycle: why the cycle ran
	Link          int64               // SignalStopOut
	Pruned        int64               // SignalPruned: rows deleted
}

// signal reports s to the observer, if there is one.
func (a *accountActor) signal(s Signal) {
	if a.e.observe == nil {
		return
	}
	s.Node, s.Account, s.Epoch = a.e.cfg.NodeID, a.id, a.epoch
	a.e.observe(s)
}
