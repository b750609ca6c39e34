package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/store"
)

// drainTimeout bounds a graceful drain (AccountActors finish their in-flight orders,
// statuses are flushed, leases released).
const drainTimeout = 60 * time.Second

// Node states as the console reports them.
const (
	nodeRunning  = "running"  // claiming and copying
	nodePaused   = "paused"   // not claiming new accounts; copying what it holds
	nodeDraining = "draining" // handing its accounts back (Stop in progress)
	nodeStopped  = "stopped"  // drained: no accounts, no cycles
)

// nodeControl tracks what the console did to the embedded node. Every call into the node
// that changes it is made under mu, so a pause can never race a drain or a resume.
type nodeControl struct {
	mu       sync.Mutex
	node     *actors.Node
	restart  func(context.Context) (*actors.Node, error) // nil: a drain cannot be undone
	claiming bool
	state    string // "" = running or paused per claiming
	released int
	stopErr  string
	at       time.Time // when the drain finished
}

// current returns the node the console controls now (a resume replaces it), or nil.
func (c *nodeControl) current() *actors.Node {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.node
}

// nodeState returns the node's state.
func (c *nodeControl) nodeState() (state string, claiming bool, drainErr string, released int, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	state = c.state
	if state == "" {
		state = nodeRunning
		if !c.claiming {
			state = nodePaused
		}
	}
	return state, c.claiming && c.state == "", c.stopErr, c.released, c.at
}

var errNodeStopped = errors.New("this node was drained and has stopped; resume it (POST /api/node/resume) or restart the process to rejoin")

var errDraining = errors.New("this node is draining; wait until it has stopped, then resume it")

// setClaiming pauses or resumes claiming.
func (c *nodeControl) setClaiming(claiming bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.state {
	case nodeDraining:
		return errDraining
	case nodeStopped:
		return errNodeStopped
	}
	if c.claiming == claiming {
		return nil // nothing to change
	}
	c.node.SetDraining(!claiming)
	c.claiming = claiming
	return nil
}

// drain stops claiming and then stops the node gracefully, which releases every lease it
// holds. It is idempotent: a second drain returns the first one's result.
func (c *nodeControl) drain(ctx context.Context, s *Server) error {
	c.mu.Lock()
	if c.state != "" {
		c.mu.Unlock()
		return nil
	}
	c.state = nodeDraining
	c.claiming = false
	node := c.node // not replaced while draining: resume refuses
	node.SetDraining(true)
	c.mu.Unlock()

	// The drain runs to its end even if the client goes away.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drainTimeout)
	defer cancel()
	nodeID := node.Config().NodeID
	before, _ := store.CountOwnedBy(dctx, s.opts.Pool, nodeID)
	err := node.Stop(dctx)
	after, cerr := store.CountOwnedBy(dctx, s.opts.Pool, nodeID)

	c.mu.Lock()
	defer c.mu.Unlock()
	c.state = nodeStopped
	c.at = time.Now()
	if cerr == nil {
		c.released = max(before-after, 0)
	}
	if err != nil {
		c.stopErr = err.Error()
		s.log.Error().Err(err).Str("node", nodeID).Msg("console drain: node stop failed; its leases expire by themselves")
		return err
	}
	s.log.Info().Str("node", nodeID).Int("released", c.released).Msg("console drain: node stopped and released its accounts")
	return nil
}

var errNoRestart = errors.New("this process cannot restart its node from the console; restart the process to rejoin")

// resume undoes a drain: it starts the node again (Options.Restart) and it claims
// accounts in its next lease cycle. On a node that was not drained it resumes claiming.
// It is idempotent.
func (c *nodeControl) resume(ctx context.Context, s *Server) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.state {
	case "":
		if !c.claiming {
			c.node.SetDraining(false)
			c.claiming = true
		}
		return nil
	case nodeDraining:
		return errDraining
	}
	if c.restart == nil {
		return errNoRestart
	}
	n, err := c.restart(ctx)
	if err != nil {
		s.log.Error().Err(err).Msg("console resume: node did not start")
		return fmt.Errorf("the node did not start again: %w", err)
	}
	c.node, c.state, c.claiming, c.released, c.stopErr, c.at = n, "", true, 0, "", time.Time{}
	s.log.Info().Str("node", n.Config().NodeID).Msg("console resume: node started again")
	return nil
}

// nodeJSON is this process's node in the API.
type nodeJSON struct {
	NodeID   string `json:"node_id"`
	Platform string `json:"platform"`
	Capacity int    `json:"capacity"`
	// State is running, paused (not claiming), draining or stopped.
	State    string `json:"state"`
	Claiming bool   `json:"claiming"`
	Owned    int    `json:"owned"`
	GateOpen bool   `json:"gate_open"`
	// TrustedUntil is when the node's lease trust ends unless a cycle renews it (this
	// process's clock); TrustedLeftSeconds is the same as a countdown.
	TrustedUntil       *time.Time     `json:"trusted_until"`
	TrustedLeftSeconds float64        `json:"trusted_left_seconds"`
	LastCycle          *cycleJSON     `json:"last_cycle"`
	Phases             map[string]int `json:"phases"`
	Counters           nodeCounters   `json:"counters"`
	Lease              leaseTiming    `json:"lease"`
	Released           int            `json:"released,omitempty"`
	DrainError         string         `json:"drain_error,omitempty"`
	DrainedAt          *time.Time     `json:"drained_at,omitempty"`
}

type cycleJSON struct {
	Started    time.Time `json:"started"`
	DurationMS float64   `json:"duration_ms"`
	OK         bool      `json:"ok"`
	Error      string    `json:"error,omitempty"`
	Owned      int       `json:"owned"`
	Claimed    int       `json:"claimed"`
	Renewed    int       `json:"renewed"`
	Released   int       `json:"released"`
	Lost       int       `json:"lost"`
}

type nodeCounters struct {
	OrdersOK        int64   `json:"orders_ok"`
	OrdersFailed    int64   `json:"orders_failed"`
	DroppedWork     int64   `json:"dropped_work"`
	Reconciles      int64   `json:"reconciles"`
	Skips           int64   `json:"skips"` // master positions not copied (copier_skips_total)
	Crashes         int64   `json:"crashes"`
	Cycles          int64   `json:"cycles"`
	CycleFailures   int64   `json:"cycle_failures"`
	StaleRefused    int64   `json:"stale_writes_refused"`
	Claims          int64   `json:"claims"`
	Releases        int64   `json:"releases"`
	Lost            int64   `json:"lost"`
	CopyLatencyMean float64 `json:"copy_latency_mean_ms"`
}

type leaseTiming struct {
	LeaseSeconds    float64 `json:"lease_seconds"`
	FenceSeconds    float64 `json:"fence_seconds"`
	IntervalSeconds float64 `json:"interval_seconds"`
}

// nodeView reads the embedded node, or returns nil when there is none.
func (s *Server) nodeView() (*nodeJSON, actors.Snapshot) {
	n := s.node.current()
	if n == nil {
		return nil, actors.Snapshot{}
	}
	cfg, snap, m := n.Config(), n.Snapshot(), n.Metrics()
	state, claiming, drainErr, released, at := s.node.nodeState()
	v := &nodeJSON{NodeID: cfg.NodeID, Platform: cfg.Platform, Capacity: cfg.Capacity, State: state, Claiming: claiming,
		Owned: len(snap.Accounts), GateOpen: snap.GateOpen, TrustedLeftSeconds: max(snap.Remaining.Seconds(), 0),
		Phases: map[string]int{}, Released: released, DrainError: drainErr,
		Lease: leaseTiming{cfg.Lease.Lease.Seconds(), cfg.Lease.Fence.Seconds(), cfg.Lease.Interval.Seconds()}}
	if state == nodeStopped {
		v.Owned, v.GateOpen, v.TrustedLeftSeconds = 0, false, 0
		v.DrainedAt = &at
	} else if !snap.TrustedUntil.IsZero() {
		t := snap.TrustedUntil
		v.TrustedUntil = &t
	}
	if c := snap.LastCycle; !c.Started.IsZero() {
		v.LastCycle = &cycleJSON{Started: c.Started, DurationMS: float64(c.Duration.Microseconds()) / 1000, OK: c.Err == nil,
			Owned: c.Owned, Claimed: c.Claimed, Renewed: c.Renewed, Released: c.Released, Lost: c.Lost}
		if c.Err != nil {
			v.LastCycle.Error = c.Err.Error()
		}
	}
	for _, a := range snap.Accounts {
		v.Phases[a.Phase.String()]++
	}
	v.Counters = nodeCounters{
		OrdersOK:      m.OrdersOK.Load(),
		OrdersFailed:  m.OrdersRetryable.Load() + m.OrdersUnknown.Load() + m.OrdersPermanent.Load() + m.OrdersFenced.Load() + m.OrdersExpired.Load() + m.OrdersOther.Load(),
		DroppedWork:   m.DroppedWork.Load(),
		Reconciles:    m.ReconcilesTotal(),
		Skips:         m.SkipsTotal(),
		Crashes:       m.Crashes.Load(),
		Cycles:        m.Cycles.Load(),
		CycleFailures: m.CycleFailures.Load(),
		StaleRefused:  m.StaleWritesRefused.Load(),
		Claims:        m.Claims.Load(),
		Releases:      m.Releases.Load(),
		Lost:          m.Lost.Load(),
	}
	if h := m.CopyLatency(); h.Count > 0 {
		v.Counters.CopyLatencyMean = h.Sum / float64(h.Count) * 1000
	}
	return v, snap
}

// apiNode serves GET /api/node.
func (s *Server) apiNode(w http.ResponseWriter, r *http.Request) {
	v, _ := s.nodeView()
	if v == nil {
		writeError(w, http.StatusNotFound, "no node runs in this process (the console shows the database only)")
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// apiNodeClaiming serves POST /api/node/claiming {"claiming": bool}.
func (s *Server) apiNodeClaiming(w http.ResponseWriter, r *http.Request) {
	if s.opts.Node == nil {
		writeError(w, http.StatusNotFound, "no node runs in this process")
		return
	}
	var in struct {
		Claiming *bool `json:"claiming"`
	}
	if err := decodeJSON(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if in.Claiming == nil {
		writeJSON(w, http.StatusUnprocessableEntity, apiError{Error: "invalid input: claiming: required (true or false)",
			Fields: map[string]string{"claiming": "required (true or false)"}})
		return
	}
	if err := s.node.setClaiming(*in.Claiming); err != nil {
		writeError(w, http.StatusConflict, err.Error())
		return
	}
	s.log.Info().Str("user", principalOf(r).Name).Bool("claiming", *in.Claiming).Msg("console: node claiming changed")
	v, _ := s.nodeView()
	writeJSON(w, http.StatusOK, v)
}

// apiNodeDrain serves POST /api/node/drain: stop claiming, then stop gracefully and hand
// every account back. It answers when the node has stopped.
func (s *Server) apiNodeDrain(w http.ResponseWriter, r *http.Request) {
	if s.opts.Node == nil {
		writeError(w, http.StatusNotFound, "no node runs in this process")
		return
	}
	if err := decodeNoBody(r); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	// The drain may take up to drainTimeout: the answer must not hit the server's write
	// deadline.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(drainTimeout + 10*time.Second))
	s.log.Info().Str("user", principalOf(r).Name).Msg("console: draining node")
	if err := s.node.drain(r.Context(), s); err != nil {
		v, _ := s.nodeView()
		writeJSON(w, http.StatusInternalServerError, struct {
			Error string    `json:"error"`
			Node  *nodeJSON `json:"node"`
		}{"the node did not stop cleanly: " + err.Error() + "; leases it still holds expire by themselves", v})
		return
	}
	v, _ := s.nodeView()
	writeJSON(w, http.StatusOK, v)
}

// apiNodeResume serves POST /api/node/resume: undo a drain (start the node again) or a
// pause.
func (s *Server) apiNodeResume(w http.ResponseWriter, r *http.Request) {
	if s.opts.Node == nil {
		writeError(w, http.StatusNotFound, "no node runs in this process")
		return
	}
	if err := decodeNoBody(r); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := reqCtx(r)
	defer cancel()
	if err := s.node.resume(ctx, s); err != nil {
		writeError(w, http.StatusConflict, err.Error())
		return
	}
	s.log.Info().Str("user", principalOf(r).Name).Msg("console: node resumed")
	v, _ := s.nodeView()
	writeJSON(w, http.StatusOK, v)
}

// nodeResumeSubmit is the page form for resuming a drained node.
func (s *Server) nodeResumeSubmit(w http.ResponseWriter, r *http.Request) {
	if s.opts.Node == nil {
		s.refuse(w, r, http.StatusNotFound, "no node runs in this process")
		return
	}
	ctx, cancel := reqCtx(r)
	defer cancel()
	if err := s.node.resume(ctx, s); err != nil {
		s.refuse(w, r, http.StatusConflict, err.Error())
		return
	}
	http.Redirect(w, r, "/?done=resumed", http.StatusSeeOther)
}

// nodeClaimingSubmit is the page form for pausing and resuming claiming.
func (s *Server) nodeClaimingSubmit(w http.ResponseWriter, r *http.Request) {
	if s.opts.Node == nil {
		s.refuse(w, r, http.StatusNotFound, "no node runs in this process")
		return
	}
	claiming := r.PostFormValue("claiming") == "true"
	if err := s.node.setClaiming(claiming); err != nil {
		s.refuse(w, r, http.StatusConflict, err.Error())
		return
	}
	s.log.Info().Str("user", principalOf(r).Name).Bool("claiming", claiming).Msg("console: node claiming changed")
	done := "paused"
	if claiming {
		done = "resumed"
	}
	http.Redirect(w, r, "/?done="+done, http.StatusSeeOther)
}

// nodeDrainSubmit is the page form for draining.
func (s *Server) nodeDrainSubmit(w http.ResponseWriter, r *http.Request) {
	if s.opts.Node == nil {
		s.refuse(w, r, http.StatusNotFound, "no node runs in this process")
		return
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(drainTimeout + 10*time.Second))
	s.log.Info().Str("user", principalOf(r).Name).Msg("console: draining node")
	if err := s.node.drain(r.Context(), s); err != nil {
		s.refuse(w, r, http.StatusInternalServerError, "the node did not stop cleanly: "+err.Error()+"; leases it still holds expire by themselves")
		return
	}
	http.Redirect(w, r, "/?done=drained", http.StatusSeeOther)
}
