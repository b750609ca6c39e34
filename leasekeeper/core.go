package leasekeeper

import (
	"cmp"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/snapcopier/copier/store"
)

// The LeaseKeeper's decisions, as a pure state machine in the shape of reconcile/follower
// (and of raft's RawNode): the Keeper actor (keeper.go) turns its messages into the core's
// inputs and carries out the ready each input returns, in the order exec documents. The
// core reads no clock, does no I/O and starts no goroutine: an input that needs the time
// carries it (an instant), and every gate, timer, query, request and log line is an effect.
// Its rules read as the scenarios of testdata/*.txt:
//
//   - trust is counted from the reading taken before the cycle's query began (started),
//     never from its end; a failed cycle changes no gate;
//   - a committed cycle revokes the gates of lost accounts before it creates or confirms
//     any gate;
//   - a hand-off closes the gates, then stops the actors, then flushes, then releases; a
//     failed stop or flush releases nothing (the leases run out), and an account whose
//     order of unknown outcome may still execute is held back until it no longer can;
//   - a shutdown closes every gate, then stops the accounts, then flushes, then releases
//     only those that ended with nothing in flight, within one budget.

// coreConfig is what the core decides with; NewKeeper fills in the defaults.
type coreConfig struct {
	Node, Platform string
	Capacity       int
	Timing         Config
	MaxHandOffs    int           // < 0: never hand off, and claim up to Capacity
	HandOffTimeout time.Duration // the stop and the flush of a hand-off each get this long
	Flush          bool          // a StatusWriter flushes before every release
}

// instant is one reading of both clocks the keeper uses: Clock, the keeper's (trust and the
// deadlines of orders held back are measured on it), and Wall, on which a shutdown's
// deadline is given.
type instant struct{ Clock, Wall time.Time }

// gateOpKind is what to do to a gate.
type gateOpKind uint8

// Gate operations.
const (
	gateCreate  gateOpKind = iota + 1 // a new, closed gate for the account at Epoch
	gateConfirm                       // extend trust to Lease.TrustedUntil()
	gateRevoke                        // close at once (a later confirmation may reopen it)
	gateForget                        // drop the gate: the account is no longer held here
	gateFence                         // close for good (halt)
)

// gateOp is one operation on the gate of account ID, or on the node-wide gate (Node).
type gateOp struct {
	Kind  gateOpKind
	ID    int64
	Node  bool
	Epoch int64 // gateCreate
	Lease Lease // gateConfirm
}

// ownedLease is one account a cycle confirmed.
type ownedLease struct{ ID, Epoch, ConfigVersion int64 }

// ownedReport becomes the Owned message to the Supervisor, with each account's gate.
type ownedReport struct {
	Accounts     []ownedLease // in the cycle's order (by id)
	TrustedUntil time.Time
}

// cycleAsk starts a lease cycle: read the keeper's clock (started), then run Req off the
// mailbox within Deadline and step its result (cycleDone).
type cycleAsk struct {
	Trigger  Trigger
	Req      store.CycleRequest
	Deadline time.Duration
}

// leaseEndClaim replaces the lease-end claim: none when Wait is zero, else a cycle
// (TriggerLeaseEnd) Wait + leaseEndMargin after Done (on the keeper's clock).
type leaseEndClaim struct {
	Done time.Time
	Wait time.Duration
}

// stopAccountsAsk asks the Supervisor to stop every account (StopAccounts{By}), waiting at
// most Timeout for its answer (step accountsStopped).
type stopAccountsAsk struct {
	By      time.Time
	Timeout time.Duration
}

// stopSomeAsk asks the Supervisor to stop the accounts handed off (step someStopped).
type stopSomeAsk struct {
	IDs     []int64
	Timeout time.Duration
}

// flushFor says which release waits for a flush.
type flushFor uint8

const (
	flushShutdown flushFor = iota + 1
	flushHandOff
)

// flushAsk asks the StatusWriter to flush, waiting at most Timeout (step flushed).
type flushAsk struct {
	For     flushFor
	Timeout time.Duration
}

// releaseAsk gives back the leases at shutdown (store.ReleaseAll) before By (wall clock);
// step released.
type releaseAsk struct {
	Held []store.Held
	By   time.Time
}

// handOffAsk gives back handed-off leases (store.HandOff) within Timeout; step handedOff.
type handOffAsk struct {
	Held    []store.Held
	Timeout time.Duration
}

// holdBackAsk steps releaseHeldBack(Held) after In: the orders that held them back can no
// longer execute then.
type holdBackAsk struct {
	Held []store.Held
	In   time.Duration
}

// note is a line for the log.
type note struct {
	Warn   bool
	Msg    string
	Err    error
	Fields []field
}

type field struct {
	Key string
	Val any // int, time.Duration or string
}

// ready is what the core asks for after an input. The Keeper carries it out in the order
// of its fields (exec): gates first, so that no account is told it is owned, and no actor
// is asked to stop, before its gate says so.
type ready struct {
	Gates []gateOp     // in order: revocations before any creation or confirmation
	Owned *ownedReport // tell the Supervisor what this node owns
	// HandOffGates close the gates of the accounts a hand-off begins with, after Owned
	// (which still names them) and before StopSome.
	HandOffGates []gateOp
	StopTimers   bool // end the ticker, the wake and the lease-end claims (shutdown, halt)
	CancelCycle  bool // cancel the cycle in flight (halt)
	SkipClaim    bool // the cycle in flight skips its claim; it is not cancelled
	StopSome     *stopSomeAsk
	Notes        []note
	Report       *CycleReport // OnCycle
	StopAccounts *stopAccountsAsk
	Flush        *flushAsk
	Release      *releaseAsk
	HandOff      *handOffAsk
	HoldBack     *holdBackAsk
	LeaseEnd     *leaseEndClaim
	Wake         bool // a claim after a random jitter (step tick(TriggerWake))
	Cycle        *cycleAsk
	ShutdownDone *ShutdownDone // answer every Shutdown waiting
	HandedOff    *int          // OnHandOff: leases a hand-off released
}

func (r *ready) gate(kind gateOpKind, id int64) {
	r.Gates = append(r.Gates, gateOp{Kind: kind, ID: id})
}

func (r *ready) nodeGate(kind gateOpKind, l Lease) {
	r.Gates = append(r.Gates, gateOp{Kind: kind, Node: true, Lease: l})
}

func (r *ready) log(warn bool, msg string, err error, kv ...any) {
	n := note{Warn: warn, Msg: msg, Err: err}
	for i := 0; i+1 < len(kv); i += 2 {
		n.Fields = append(n.Fields, field{Key: kv[i].(string), Val: kv[i+1]})
	}
	r.Notes = append(r.Notes, n)
}

// core is the LeaseKeeper's state. One actor steps it; it is not safe for concurrent use.
type core struct {
	cfg      coreConfig
	held     []store.Held
	epochs   map[int64]int64 // the accounts with a gate: id → its epoch
	inFlight bool
	queued   *Trigger // a claim that waits for the cycle in flight
	// wakeSet: a wake's claim is scheduled (wakes are coalesced into it).
	wakeSet    bool
	draining   bool
	stopping   bool
	halted     bool
	shutdownBy time.Time // the shutdown's one budget ends here (wall clock)
	flushBy    time.Time // ... and its flush here
	// handingOff holds the accounts being handed back (id → epoch): their gates are
	// revoked and their actors stopping; they are renewed until released, never confirmed
	// or reported as owned again. batch is the same hand-off in its order. handedOff
	// remembers the (id, epoch) leases a hand-off gave back, so that a cycle that renewed
	// one before the release committed cannot bring it back.
	handingOff map[int64]int64
	batch      []store.Held
	handedOff  map[int64]int64
}

func newCore(cfg coreConfig) *core {
	return &core{cfg: cfg, epochs: map[int64]int64{}, handingOff: map[int64]int64{}, handedOff: map[int64]int64{}}
}

// setDraining stops (true) or resumes claims.
func (c *core) setDraining(d bool) { c.draining = d }

// halt closes every gate for good and ignores every cycle from now on, the one in flight
// included: no order is sent after Halt returns, and no late result reopens a gate.
func (c *core) halt() ready {
	var r ready
	c.halted = true
	r.StopTimers, r.CancelCycle = true, true
	c.queued = nil
	for _, id := range slices.Sorted(maps.Keys(c.epochs)) {
		r.gate(gateFence, id)
	}
	r.nodeGate(gateFence, Lease{})
	return r
}

// wake schedules one claim after a random jitter, unless one is already scheduled: a burst
// of notifications costs one cycle.
func (c *core) wake() ready {
	var r ready
	if c.wakeSet || c.stopping || c.halted || c.draining {
		return r
	}
	c.wakeSet, r.Wake = true, true
	return r
}

// tick asks for a cycle.
func (c *core) tick(trigger Trigger) ready {
	var r ready
	if trigger == TriggerWake {
		c.wakeSet = false
	}
	c.startCycle(trigger, &r)
	return r
}

func (c *core) startCycle(trigger Trigger, r *ready) {
	if c.stopping || c.halted {
		return
	}
	if c.inFlight {
		// Never two at once. A periodic tick is dropped (the next one comes soon); a claim
		// for a wake or a lease end runs right after the cycle in flight, which may have
		// started before the release it answers.
		if trigger != TriggerInterval {
			c.queued = &trigger
		}
		return
	}
	c.inFlight, c.queued = true, nil
	req := store.CycleRequest{
		Node: c.cfg.Node, Platform: c.cfg.Platform, Lease: c.cfg.Timing.Lease,
		Held: slices.Clone(c.held), Capacity: c.cfg.Capacity, NoClaim: c.draining,
	}
	if c.cfg.MaxHandOffs >= 0 {
		node := c.cfg.Node
		req.Share = func(v store.ClusterView) int { return FairShare(v, node) }
		if len(c.handingOff) == 0 && !c.draining {
			bound := c.cfg.MaxHandOffs
			req.HandOffs = func(owned, share int) int { return HandOffCount(owned, share, bound) }
		}
	}
	// The cycle has its own deadline, shorter than the trust it grants (Config.CycleDeadline;
	// docs/design.md §2).
	r.Cycle = &cycleAsk{Trigger: trigger, Req: req, Deadline: c.cfg.Timing.CycleDeadline()}
}

// cycleDone steps a cycle's result. m.started is the keeper's clock read before the
// query began; m.fenced the gates an order found fenced (id → epoch), read by the Keeper
// when the result arrived.
func (c *core) cycleDone(m cycleDone, now instant) ready {
	var r ready
	c.inFlight = false
	report := CycleReport{Trigger: m.trigger, Started: m.started, Duration: m.elapsed, Err: m.err}
	if c.halted {
		// A halted node acts as a crashed one: nothing from a late cycle.
		report.Err = ErrHalted
		r.Report = &report
		return r
	}
	switch {
	case m.err != nil:
		// Nothing changes: the gates close by themselves when their trust runs out.
		r.log(true, "lease cycle failed", m.err, "elapsed", m.elapsed)
	case c.stopping:
		// Committed after shutdown began: release what it holds, start nothing.
		c.held = c.held[:0]
		for _, o := range m.res.Owned {
			c.held = append(c.held, store.Held{ID: o.ID, Epoch: o.Epoch})
		}
	default:
		report = c.apply(m, report, &r)
		report.HandingOff = c.startHandOff(report.Owned, m.res.Share, m.res.HandOff, &r)
	}
	r.Report = &report
	if c.stopping {
		c.stopAccounts(now, &r)
		return r
	}
	if m.err == nil {
		// The database measured the wait from a moment before the result arrived.
		claim := leaseEndClaim{Done: m.started.Add(m.elapsed), Wait: m.res.NextForeignExpiry}
		if c.draining {
			claim.Wait = 0
		}
		r.LeaseEnd = &claim
	}
	if q := c.queued; q != nil {
		c.startCycle(*q, &r)
	}
	return r
}

// apply publishes a committed cycle: lost accounts' gates are revoked before any gate is
// created or confirmed, so an account that moved away never sees an open gate again. An
// account whose gate was fenced (the trade server saw a newer token) is neither confirmed
// nor renewed at that epoch: its lease runs out and it is claimed again with a new epoch.
func (c *core) apply(m cycleDone, report CycleReport, r *ready) CycleReport {
	lease := Lease{Started: m.started, Config: c.cfg.Timing}
	now := map[int64]int64{}
	for _, o := range m.res.Owned {
		now[o.ID] = o.Epoch
	}
	for _, id := range slices.Sorted(maps.Keys(c.epochs)) {
		if ep, ok := now[id]; !ok || ep != c.epochs[id] {
			r.gate(gateRevoke, id)
			r.gate(gateForget, id)
			delete(c.epochs, id)
			report.Lost++
		}
	}
	c.held = c.held[:0]
	var owned []ownedLease
	for _, o := range m.res.Owned {
		if ep, ok := c.handedOff[o.ID]; ok && ep == o.Epoch {
			continue // renewed before its hand-off's release committed: released since
		}
		if ep, ok := c.handingOff[o.ID]; ok && ep == o.Epoch {
			// Renewed until its release commits (its actor may still be finishing an
			// order), but never confirmed or owned again.
			c.held = append(c.held, store.Held{ID: o.ID, Epoch: o.Epoch})
			continue
		}
		if _, ok := c.epochs[o.ID]; !ok {
			c.epochs[o.ID] = o.Epoch
			r.Gates = append(r.Gates, gateOp{Kind: gateCreate, ID: o.ID, Epoch: o.Epoch})
		}
		if ep, ok := m.fenced[o.ID]; ok && ep == o.Epoch {
			continue // not renewed again at this epoch
		}
		r.Gates = append(r.Gates, gateOp{Kind: gateConfirm, ID: o.ID, Lease: lease})
		owned = append(owned, ownedLease{ID: o.ID, Epoch: o.Epoch, ConfigVersion: o.ConfigVersion})
		c.held = append(c.held, store.Held{ID: o.ID, Epoch: o.Epoch})
	}
	for id, ep := range c.handedOff {
		if now[id] != ep {
			// This cycle did not renew that lease: later ones cannot (it is not held).
			delete(c.handedOff, id)
		}
	}
	report.Lost -= len(m.res.Released) // released on purpose, not lost
	r.nodeGate(gateConfirm, lease)
	report.Owned, report.Claimed, report.Renewed, report.Released = len(owned), m.res.Claimed, m.res.Renewed, len(m.res.Released)
	report.Share, report.LiveNodes = m.res.Share, len(m.res.View.Nodes)
	if m.res.Claimed > 0 || report.Lost > 0 || len(m.res.Released) > 0 {
		r.log(false, "lease cycle", nil, "owned", len(owned), "claimed", m.res.Claimed,
			"released", len(m.res.Released), "lost", report.Lost, "elapsed", m.elapsed)
	}
	r.Owned = &ownedReport{Accounts: owned, TrustedUntil: lease.TrustedUntil()}
	return report
}

// startHandOff begins to hand back the surplus over the node's fair share (HandOffCount:
// hysteresis, never below the share, at most MaxHandOffs per cycle), one hand-off at a
// time. The accounts' gates are revoked at once (no new order), their actors stop (each
// finishes its order in flight), the statuses and ticket maps are flushed, and only then
// are the leases released by (id, epoch), which wakes the other nodes. It returns how many
// accounts it began to hand off.
func (c *core) startHandOff(owned, share int, picked []store.Held, r *ready) int {
	if len(c.handingOff) > 0 || c.draining || c.stopping || c.cfg.MaxHandOffs < 0 || share <= 0 {
		return 0
	}
	n := HandOffCount(owned, share, c.cfg.MaxHandOffs)
	if n == 0 {
		return 0
	}
	// The cycle picked them (whole masters with the fewest followers here first), among
	// the leases it renewed; those this node still holds confirmed go. Without a pick the
	// highest ids go.
	held := map[int64]int64{}
	for _, h := range c.held {
		held[h.ID] = h.Epoch
	}
	var handOff []store.Held
	for _, h := range picked {
		if ep, ok := held[h.ID]; ok && ep == h.Epoch && len(handOff) < n {
			handOff = append(handOff, h)
		}
	}
	for i := len(c.held) - 1; i >= 0 && len(handOff) < n && len(picked) == 0; i-- {
		handOff = append(handOff, c.held[i])
	}
	if len(handOff) == 0 {
		return 0
	}
	ids := make([]int64, len(handOff))
	for i, h := range handOff {
		ids[i] = h.ID
		c.handingOff[h.ID] = h.Epoch
		r.HandOffGates = append(r.HandOffGates, gateOp{Kind: gateRevoke, ID: h.ID}, gateOp{Kind: gateForget, ID: h.ID})
		delete(c.epochs, h.ID)
	}
	c.batch = handOff
	r.log(false, "handing off accounts over the fair share", nil, "accounts", len(ids), "share", share, "owned", owned)
	r.StopSome = &stopSomeAsk{IDs: ids, Timeout: c.cfg.HandOffTimeout}
	return len(ids)
}

// someStopped steps the Supervisor's answer to a hand-off's StopSome (err: none in time).
func (c *core) someStopped(stopped SomeStopped, err error, now instant) ready {
	var r ready
	if c.stopping || c.halted {
		return r // the shutdown releases them with the rest; a halted node lets them expire
	}
	batch := c.batch
	if err != nil {
		// An actor may still be sending: releasing now could let a new owner send
		// beside it. They are no longer renewed, so their leases run out instead.
		r.log(true, "hand-off: accounts did not stop in time; their leases will run out instead", err, "accounts", len(batch))
		c.finishHandOff(handedOff{held: batch, err: err}, &r)
		return r
	}
	if batch = c.holdBack(batch, stopped.HeldBack, now.Clock, &r); len(batch) == 0 {
		return r
	}
	c.batch = batch
	if !c.cfg.Flush {
		c.releaseHandOff(batch, &r)
		return r
	}
	r.Flush = &flushAsk{For: flushHandOff, Timeout: c.cfg.HandOffTimeout}
	return r
}

// flushed steps the StatusWriter's answer to a Flush (err: it failed or did not answer).
func (c *core) flushed(which flushFor, err error, now instant) ready {
	var r ready
	if which == flushShutdown {
		if err != nil {
			r.log(true, "final status flush failed; releasing anyway", err)
		}
		c.release(now, &r)
		return r
	}
	if c.stopping || c.halted {
		return r
	}
	if err != nil {
		// Rows still queued (statuses, the ticket map) would be lost to a release now, and
		// the new owner would reconcile without them. The node stays, so nothing forces the
		// release: they are no longer renewed and run out within one lease, while the
		// writer may still land its queue.
		r.log(true, "hand-off: status flush failed; their leases will run out instead", err, "accounts", len(c.batch))
		c.finishHandOff(handedOff{held: c.batch, err: err}, &r)
		return r
	}
	c.releaseHandOff(c.batch, &r)
	return r
}

// errHeldBack ends the hand-off of accounts whose actors stopped with an order of unknown
// outcome in flight.
var errHeldBack = errors.New("an order of unknown outcome may still execute")

// holdBack takes out of a hand-off the accounts whose actors stopped with an order of
// unknown outcome that may still execute (heldBack: until when, on the keeper's clock),
// and returns the rest. Those are no longer renewed, and are released only once the last
// such order can no longer execute (unless the node stops or halts first: then they run
// out): a new owner that claimed them earlier could copy beside that order.
func (c *core) holdBack(handOff []store.Held, heldBack map[int64]time.Time, now time.Time, r *ready) []store.Held {
	last := time.Time{}
	var back []store.Held
	handOff = slices.DeleteFunc(handOff, func(h store.Held) bool {
		until, ok := heldBack[h.ID]
		if !ok || !now.Before(until) {
			return false
		}
		back = append(back, h)
		last = later(last, until)
		return true
	})
	if len(back) == 0 {
		return handOff
	}
	c.finishHandOff(handedOff{held: back, err: errHeldBack}, r)
	r.HoldBack = &holdBackAsk{Held: back, In: last.Sub(now)}
	return handOff
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// releaseHeldBack releases hand-offs held back by an order of unknown outcome, once that
// order can no longer execute.
func (c *core) releaseHeldBack(held []store.Held) ready {
	var r ready
	if !c.stopping && !c.halted {
		c.releaseHandOff(held, &r)
	}
	return r
}

func (c *core) releaseHandOff(held []store.Held, r *ready) {
	r.HandOff = &handOffAsk{Held: held, Timeout: c.cfg.Timing.CycleDeadline()}
}

// handOffDone steps the end of a hand-off's release.
func (c *core) handOffDone(m handedOff) ready {
	var r ready
	c.finishHandOff(m, &r)
	return r
}

// finishHandOff forgets the handed-off accounts: they are not renewed again, and a cycle
// that renewed one before the release committed is ignored for it. After a failed stop,
// flush or release their leases run out by themselves.
func (c *core) finishHandOff(m handedOff, r *ready) {
	gone := map[int64]bool{}
	for _, h := range m.held {
		gone[h.ID] = true
		delete(c.handingOff, h.ID)
		c.handedOff[h.ID] = h.Epoch
	}
	c.held = slices.DeleteFunc(c.held, func(h store.Held) bool { return gone[h.ID] })
	switch {
	case errors.Is(m.err, errHeldBack):
		r.log(false, "hand-off held back until an order of unknown outcome can no longer execute", nil, "accounts", len(m.held))
		return
	case m.err != nil:
		r.log(true, "hand-off ended without a release; the leases will run out instead", m.err, "accounts", len(m.held))
		return
	}
	n := int(m.n)
	r.HandedOff = &n
}

// shutdown begins a clean shutdown that ends by deadline (zero: DefaultShutdownTimeout
// from now). A cycle in flight is not cancelled (a cancel that races the commit leaves
// claims committed that the node never learns of, and so never releases): it skips its
// claim if it has not reached it, and its result is released with the rest.
func (c *core) shutdown(deadline time.Time, now instant) ready {
	var r ready
	if c.halted {
		// Nothing left to stop or release (the leases run out): answer at once rather than
		// leave the caller waiting for its future to time out.
		r.ShutdownDone = &ShutdownDone{Err: ErrHalted}
		return r
	}
	if c.stopping {
		return r // answered with the shutdown in progress
	}
	c.stopping = true
	c.shutdownBy = cmp.Or(deadline, now.Wall.Add(DefaultShutdownTimeout))
	r.StopTimers = true
	c.queued, c.wakeSet = nil, false
	if c.inFlight {
		r.SkipClaim = true
	} else {
		c.stopAccounts(now, &r)
	}
	return r
}

// stopAccounts closes every gate, then asks the Supervisor to stop every account, within
// the shutdown's one budget (ShutdownSplit): the release always gets its share.
func (c *core) stopAccounts(now instant, r *ready) {
	accountsBy, flushBy := ShutdownSplit(now.Wall, c.shutdownBy)
	c.flushBy = flushBy
	// No order starts from here: closed before the actors are asked to stop (as in a
	// hand-off), so none can begin while they wind down.
	for _, id := range slices.Sorted(maps.Keys(c.epochs)) {
		r.gate(gateRevoke, id)
	}
	r.nodeGate(gateRevoke, Lease{})
	r.StopAccounts = &stopAccountsAsk{By: accountsBy, Timeout: max(flushBy.Sub(now.Wall), time.Millisecond)}
}

// accountsStopped steps the Supervisor's answer to StopAccounts (err: none in time), then
// flushes the statuses and releases the leases of the accounts whose actors ended with
// nothing in flight. An account whose actor had not ended, or ended with an order of
// unknown outcome that may still execute, is not released: its lease runs out as a
// crashed node's would, after that order's deadline (a new owner could otherwise copy
// beside it).
func (c *core) accountsStopped(stopped AccountsStopped, err error, now instant) ready {
	var r ready
	c.held = releasable(c.held, stopped, err, now.Clock)
	switch {
	case err != nil:
		r.log(true, "accounts did not answer the stop; no lease released, they run out instead", err)
	case len(stopped.Running) > 0 || len(stopped.HeldBack) > 0:
		r.log(true, "some accounts did not stop in time or have an order of unknown outcome in flight; their leases run out instead", nil,
			"running", len(stopped.Running), "held_back", len(stopped.HeldBack))
	}
	if !c.cfg.Flush {
		c.release(now, &r)
		return r
	}
	r.Flush = &flushAsk{For: flushShutdown, Timeout: max(c.flushBy.Sub(now.Wall), time.Millisecond)}
	return r
}

// releasable keeps, of held, the leases that a stop allows to release at now: none when
// the stop was not answered (err), else those of accounts neither still running nor held
// back by an order that may still execute.
func releasable(held []store.Held, stopped AccountsStopped, err error, now time.Time) []store.Held {
	if err != nil {
		return held[:0]
	}
	return slices.DeleteFunc(held, func(h store.Held) bool {
		until, back := stopped.HeldBack[h.ID]
		return slices.Contains(stopped.Running, h.ID) || (back && now.Before(until))
	})
}

// release gives back every lease still held, with what is left of the budget.
func (c *core) release(now instant, r *ready) {
	r.Release = &releaseAsk{Held: slices.Clone(c.held), By: releaseBy(now.Wall, c.shutdownBy)}
}

// released steps the end of the shutdown's release: every Shutdown waiting is answered.
func (c *core) released(n int64, err error) ready {
	return ready{ShutdownDone: &ShutdownDone{Released: n, Err: err}}
}
