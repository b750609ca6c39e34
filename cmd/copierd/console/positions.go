package console

import (
	"context"
	"net/http"
	"sort"
	"time"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/store"
)

// positionsTimeout bounds the broker calls of one positions view.
const positionsTimeout = 5 * time.Second

// posJSON is an open position, as the positions snapshots store it.
type posJSON = actors.SnapshotPosition

var newPosJSON = actors.NewSnapshotPosition

// Copy states of a pairJSON.
const (
	copyOK        = "copied"    // one copy of an open master position
	copyMissing   = "missing"   // master position without a copy (yet, or filtered, or too old)
	copyDuplicate = "duplicate" // more than one copy
	copyOrphan    = "orphan"    // a copy whose master position is not open
)

// pairJSON is a master position beside its copies on the follower.
type pairJSON struct {
	Master *posJSON  `json:"master"`
	Copies []posJSON `json:"copies"`
	State  string    `json:"state"`
}

// linkPositionsJSON is one link's master positions beside the follower's copies.
type linkPositionsJSON struct {
	LinkID      int64      `json:"link_id"`
	MasterID    int64      `json:"master_id"`
	MasterLogin string     `json:"master_login"`
	Magic       int64      `json:"magic"`
	Enabled     bool       `json:"enabled"`
	Pairs       []pairJSON `json:"pairs"`
	Error       string     `json:"error,omitempty"`
}

// positionsJSON is GET /api/accounts/{id}/positions.
type positionsJSON struct {
	// Available is false when this process has no broker controller (Reason says so).
	Available bool   `json:"available"`
	Reason    string `json:"reason,omitempty"`
	AccountID int64  `json:"account_id"`
	Role      string `json:"role"`
	// Positions are the account's own open positions.
	Positions []posJSON `json:"positions"`
	Error     string    `json:"error,omitempty"`
	// Links (followers only): every link's master positions beside their copies.
	Links []linkPositionsJSON `json:"links,omitempty"`
	// Other (followers only): positions no link claims (manual trades, other magics).
	Other []posJSON `json:"other,omitempty"`
	// Snapshot (followers only): the positions as the account's owner last saw them,
	// written through the lease fence by whichever node owns it; there even when this
	// process has no broker controller.
	Snapshot *snapshotJSON `json:"snapshot,omitempty"`
}

// snapshotJSON is a follower's positions snapshot from the database.
type snapshotJSON struct {
	Node      string    `json:"node"`
	Epoch     int64     `json:"epoch"`
	SeenAt    time.Time `json:"seen_at"`
	Positions []posJSON `json:"positions"`
}

// loadSnapshot reads a follower's positions snapshot; nil when there is none (or it cannot
// be read: the live view does not depend on it).
func (s *Server) loadSnapshot(ctx context.Context, id int64) *snapshotJSON {
	snap, ok, err := store.ReadPositionsSnapshot(ctx, s.opts.Pool, id)
	if err != nil {
		s.log.Warn().Err(err).Int64("account", id).Msg("console: positions snapshot")
	}
	if !ok {
		return nil
	}
	ps, err := actors.DecodeSnapshot(snap.Positions)
	if err != nil {
		s.log.Warn().Err(err).Int64("account", id).Msg("console: positions snapshot")
		return nil
	}
	if ps == nil {
		ps = []posJSON{} // an empty snapshot shows as [], as before
	}
	return &snapshotJSON{Node: snap.Node, Epoch: snap.Epoch, SeenAt: snap.SeenAt, Positions: ps}
}

// loadPositions reads an account's positions and, for a follower, its masters' from the
// broker controller, and pairs master positions with their copies: by the ticket map
// first, then by the link's magic number and the mc<ticket> comment marker.
func (s *Server) loadPositions(ctx context.Context, a store.AccountRow, links []store.LinkRow) positionsJSON {
	out := positionsJSON{AccountID: a.ID, Role: string(a.Role), Positions: []posJSON{}}
	if a.Role == store.RoleFollower {
		out.Snapshot = s.loadSnapshot(ctx, a.ID)
	}
	if s.opts.Control == nil {
		out.Reason = "positions are not available: this process has no broker controller"
		return out
	}
	out.Available = true
	ctx, cancel := context.WithTimeout(ctx, positionsTimeout)
	defer cancel()
	own, err := s.opts.Control.AccountPositions(ctx, a.Login)
	if err != nil {
		out.Error = "cannot read the account's positions: " + err.Error()
		return out
	}
	sortPositions(own)
	for _, p := range own {
		out.Positions = append(out.Positions, newPosJSON(p))
	}
	if a.Role != store.RoleFollower {
		return out
	}
	tickets, err := store.OpenTickets(ctx, s.opts.Pool, a.ID)
	if err != nil {
		out.Error = "cannot read the ticket map"
		s.log.Warn().Err(err).Int64("account", a.ID).Msg("console: ticket map")
	}
	claimed := map[int64]bool{} // follower tickets some link claims
	masterCache := map[string][]broker.Position{}
	for _, l := range links {
		if l.FollowerID != a.ID {
			continue
		}
		lp := linkPositionsJSON{LinkID: l.ID, MasterID: l.MasterID, MasterLogin: l.MasterLogin, Magic: l.Magic, Enabled: l.Enabled, Pairs: []pairJSON{}}
		masters, ok := masterCache[l.MasterLogin]
		if !ok {
			masters, err = s.opts.Control.AccountPositions(ctx, l.MasterLogin)
			if err != nil {
				lp.Error = "cannot read the master's positions: " + err.Error()
				out.Links = append(out.Links, lp)
				continue
			}
			sortPositions(masters)
			masterCache[l.MasterLogin] = masters
		}
		byFollowerTicket := map[int64]int64{}
		for _, t := range tickets {
			if t.LinkID == l.ID {
				byFollowerTicket[t.FollowerTicket] = t.MasterTicket
			}
		}
		copies := map[int64][]posJSON{} // master ticket → copies
		var orphans []posJSON
		for _, p := range own {
			if p.Magic != l.Magic {
				continue
			}
			claimed[p.Ticket] = true
			mt, ok := byFollowerTicket[p.Ticket]
			if !ok {
				mt, ok = reconcile.ParseMarker(p.Comment)
			}
			if !ok {
				orphans = append(orphans, newPosJSON(p))
				continue
			}
			copies[mt] = append(copies[mt], newPosJSON(p))
		}
		open := map[int64]bool{}
		for _, m := range masters {
			open[m.Ticket] = true
			mp := newPosJSON(m)
			pair := pairJSON{Master: &mp, Copies: copies[m.Ticket], State: copyOK}
			switch len(pair.Copies) {
			case 0:
				pair.State = copyMissing
			case 1:
			default:
				pair.State = copyDuplicate
			}
			if pair.Copies == nil {
				pair.Copies = []posJSON{}
			}
			lp.Pairs = append(lp.Pairs, pair)
		}
		var gone []int64
		for mt := range copies {
			if !open[mt] {
				gone = append(gone, mt)
			}
		}
		sort.Slice(gone, func(i, j int) bool { return gone[i] < gone[j] })
		for _, mt := range gone {
			orphans = append(orphans, copies[mt]...)
		}
		for _, o := range orphans {
			lp.Pairs = append(lp.Pairs, pairJSON{Copies: []posJSON{o}, State: copyOrphan})
		}
		out.Links = append(out.Links, lp)
	}
	for _, p := range own {
		if !claimed[p.Ticket] {
			out.Other = append(out.Other, newPosJSON(p))
		}
	}
	return out
}

func sortPositions(ps []broker.Position) {
	sort.Slice(ps, func(i, j int) bool { return ps[i].Ticket < ps[j].Ticket })
}

// apiAccountPositions serves GET /api/accounts/{id}/positions.
func (s *Server) apiAccountPositions(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(r)
	if !ok {
		writeError(w, http.StatusBadRequest, "account id must be a positive integer")
		return
	}
	ctx, cancel := reqCtx(r)
	defer cancel()
	a, err := store.GetAccountRow(ctx, s.opts.Pool, id)
	if err != nil {
		status, msg := s.storeFailure(err, "account")
		writeError(w, status, msg)
		return
	}
	links, _, err := store.FindLinks(ctx, s.opts.Pool, store.LinkQuery{FollowerID: id, Limit: store.MaxPageSize})
	if err != nil {
		status, msg := s.storeFailure(err, "links")
		writeError(w, status, msg)
		return
	}
	writeJSON(w, http.StatusOK, s.loadPositions(ctx, a, links))
}
