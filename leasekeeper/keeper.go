package leasekeeper

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/store"
)

// KeeperConfig configures the LeaseKeeper actor.
type KeeperConfig struct {
	Node     string
	Platform string
	Capacity int
	Timing   Config
	Pool     *pgxpool.Pool
	Clock    Clock
	// NodeGate is the node-wide gate (readiness): open while the last cycle's trust lasts.
	NodeGate   *Gate
	Supervisor *actor.PID
	// Flusher, when set, is asked to Flush after the accounts stopped and before release.
	Flusher *actor.PID
	Logger  zerolog.Logger
	// OnCycle, when set, is called from the actor after every cycle (keep it cheap).
	OnCycle func(CycleReport)
	// Cycle runs one lease cycle; default store.LeaseCycle on Pool. Tests inject a fake.
	Cycle func(ctx context.Context, req store.CycleRequest) (store.CycleResult, error)
	// Release gives back the leases a shutdown may release; default store.ReleaseAll on Pool.
	Release func(ctx context.Context, node string, held []store.Held) (int64, error)
	// WakeJitter bounds the random delay between a Wake and its claim (default 100 ms), so
	// that the nodes woken by one release do not all claim at the same instant.
	WakeJitter time.Duration
	// MaxHandOffs bounds the accounts handed back per cycle when the node holds more than
	// its fair share (default 500; negative: never hand off, and claim up to Capacity
	// whatever the share).
	MaxHandOffs int
	// HandOffTimeout bounds the stop of the accounts handed off (default 15 s): if they
	// have not all stopped by then nothing is released: they are no longer renewed, so
	// their leases run out and move as a crashed node's would.
	HandOffTimeout time.Duration
	// HandOff releases handed-off leases; default store.HandOff on Pool.
	HandOff func(ctx context.Context, node string, held []store.Held) (int64, error)
	// OnHandOff, when set, is called from the actor with the leases a hand-off released.
	OnHandOff func(released int)
}

// Hand-off defaults.
const (
	DefaultMaxHandOffs    = 500
	DefaultHandOffTimeout = 15 * time.Second
)

// DefaultWakeJitter is KeeperConfig.WakeJitter's default.
const DefaultWakeJitter = 100 * time.Millisecond

// leaseEndMargin is added to a foreign lease's end before the claim that follows it: the
// claim's transaction must begin after the lease ended by the database's clock.
const leaseEndMargin = 20 * time.Millisecond

// ErrHalted is the error of a cycle that ended after Halt: its result was ignored.
var ErrHalted = errors.New("leasekeeper: node halted; cycle result ignored")

// tick starts a cycle; cycleDone carries its result back into the actor.
type tick struct{ trigger Trigger }

type cycleDone struct {
	trigger Trigger
	started time.Time
	elapsed time.Duration
	res     store.CycleResult
	err     error
}

type released struct {
	n   int64
	err error
}

// handedOff carries the end of a hand-off back into the actor.
type handedOff struct {
	held []store.Held
	n    int64
	err  error
}

// Keeper is the LeaseKeeper actor. It runs one lease cycle per interval, off its own
// mailbox (the query runs in a goroutine and its result comes back as a message), confirms
// the gates, and tells the Supervisor what it owns.
type Keeper struct {
	cfg         KeeperConfig
	held        []store.Held
	gates       map[int64]*Gate
	epochs      map[int64]int64
	inFlight    bool
	cancelCycle context.CancelFunc // ends the cycle in flight (halt, actor stop)
	stopClaims  *atomic.Bool       // set at shutdown: the cycle in flight skips its claim
	draining    bool
	stopping    bool
	halted      bool
	shutdownBy  time.Time    // the shutdown's one budget ends here
	shutdown    []*actor.PID // futures waiting for ShutdownDone
	stopTick    chan struct{}
	// Claims outside the interval: a wake (coalesced: one timer at a time), the end of the
	// earliest foreign lease (one timer, replaced by every cycle), and one cycle queued
	// while another ran.
	wakeTimer     *time.Timer
	leaseEndTimer *time.Timer
	queued        *Trigger
	// handingOff holds the accounts being handed back (id → epoch): their gates are
	// revoked and their actors stopping; they are renewed until released, never confirmed
	// or reported as owned again. handedOff remembers the (id, epoch) leases a hand-off
	// gave back, so that a cycle that renewed one before the release committed cannot
	// bring it back.
	handingOff map[int64]int64
	handedOff  map[int64]int64
}

// NewKeeper returns the actor's producer.
func NewKeeper(cfg KeeperConfig) actor.Producer {
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.WakeJitter <= 0 {
		cfg.WakeJitter = DefaultWakeJitter
	}
	if cfg.MaxHandOffs == 0 {
		cfg.MaxHandOffs = DefaultMaxHandOffs
	}
	if cfg.HandOffTimeout <= 0 {
		cfg.HandOffTimeout = DefaultHandOffTimeout
	}
	if cfg.HandOff == nil {
		pool := cfg.Pool
		cfg.HandOff = func(ctx context.Context, node string, held []store.Held) (int64, error) {
			return store.HandOff(ctx, pool, node, held)
		}
	}
	if cfg.Cycle == nil {
		pool := cfg.Pool
		cfg.Cycle = func(ctx context.Context, req store.CycleRequest) (store.CycleResult, error) {
			return store.LeaseCycle(ctx, pool, req)
		}
	}
	if cfg.Release == nil {
		pool := cfg.Pool
		cfg.Release = func(ctx context.Context, node string, held []store.Held) (int64, error) {
			return store.ReleaseAll(ctx, pool, node, held)
		}
	}
	return func() actor.Actor {
		return &Keeper{cfg: cfg, gates: map[int64]*Gate{}, epochs: map[int64]int64{}, handingOff: map[int64]int64{}, handedOff: map[int64]int64{}}
	}
}

// Receive implements actor.Actor.
func (k *Keeper) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		k.startTicker(ctx)
	case *actor.Stopping:
		k.stopTicker()
		if k.cancelCycle != nil {
			k.cancelCycle()
		}
	case tick:
		if m.trigger == TriggerWake {
			k.wakeTimer = nil
		}
		k.startCycle(ctx, m.trigger)
	case Wake:
		k.wake(ctx)
	case cycleDone:
		k.finishCycle(ctx, m)
	case SetDraining:
		k.draining = m.Draining
	case Halt:
		k.halt()
		ctx.Respond(Halted{})
	case Shutdown:
		k.shutdown = append(k.shutdown, ctx.Sender())
		if !k.stopping && !k.halted {
			k.stopping = true
			k.shutdownBy = m.Deadline
			if k.shutdownBy.IsZero() {
				k.shutdownBy = time.Now().Add(DefaultShutdownTimeout)
			}
			k.stopTicker()
			if k.inFlight {
				// A cycle in flight at shutdown must not claim: it skips its claim if it
				// has not reached it, and finishCycle releases whatever it holds. It is not
				// cancelled: a cancel that races the commit leaves claims committed that
				// the node never learns of, and so never releases.
				k.stopClaims.Store(true)
			} else {
				k.stopAccounts(ctx)
			}
		}
	case handedOff:
		k.finishHandOff(m)
	case releaseHeldBack:
		if !k.stopping && !k.halted {
			k.releaseHandOff(ctx, m.held)
		}
	case released:
		for _, pid := range k.shutdown {
			if pid != nil {
				ctx.Send(pid, ShutdownDone{Released: m.n, Err: m.err})
			}
		}
		k.shutdown = nil
	}
}

// halt closes every gate for good and ignores every cycle from now on, the one in flight
// included: no order is sent after Halt returns, and no late result reopens a gate.
func (k *Keeper) halt() {
	k.halted = true
	k.stopTicker()
	if k.cancelCycle != nil {
		k.cancelCycle()
	}
	for _, g := range k.gates {
		g.Fence()
	}
	k.cfg.NodeGate.Fence()
}

// startTicker drives cycles from a goroutine the actor owns (protoactor's scheduler races
// under -race in the pinned version); the first cycle runs at once.
func (k *Keeper) startTicker(ctx actor.Context) {
	k.stopTick = make(chan struct{})
	self, root, stop, every := ctx.Self(), ctx.ActorSystem().Root, k.stopTick, k.cfg.Timing.Interval
	root.Send(self, tick{})
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				root.Send(self, tick{})
			}
		}
	}()
}

func (k *Keeper) stopTicker() {
	if k.stopTick != nil {
		close(k.stopTick)
		k.stopTick = nil
	}
	for _, t := range []**time.Timer{&k.wakeTimer, &k.leaseEndTimer} {
		if *t != nil {
			(*t).Stop()
			*t = nil
		}
	}
	k.queued = nil
}

// wake schedules one claim after a random jitter, unless one is already scheduled: a burst
// of notifications costs one cycle.
func (k *Keeper) wake(ctx actor.Context) {
	if k.wakeTimer != nil || k.stopping || k.halted || k.draining {
		return
	}
	self, root := ctx.Self(), ctx.ActorSystem().Root
	k.wakeTimer = time.AfterFunc(rand.N(k.cfg.WakeJitter), func() { root.Send(self, tick{trigger: TriggerWake}) })
}

// scheduleLeaseEnd sets the claim for the moment the earliest foreign lease ends: the
// database measured wait from a moment before the cycle's result arrived (done, on this
// node's clock), so done + wait is never before the lease's end.
func (k *Keeper) scheduleLeaseEnd(ctx actor.Context, done time.Time, wait time.Duration) {
	if k.leaseEndTimer != nil {
		k.leaseEndTimer.Stop()
		k.leaseEndTimer = nil
	}
	if wait <= 0 || k.draining {
		return
	}
	self, root := ctx.Self(), ctx.ActorSystem().Root
	k.leaseEndTimer = time.AfterFunc(leaseEndDelay(k.cfg.Clock, done, wait), func() { root.Send(self, tick{trigger: TriggerLeaseEnd}) })
}

// leaseEndDelay is how long from now until wait after done, plus the margin.
func leaseEndDelay(clock Clock, done time.Time, wait time.Duration) time.Duration {
	return max(wait+leaseEndMargin-clock.Since(done), 0)
}

func (k *Keeper) startCycle(ctx actor.Context, trigger Trigger) {
	if k.stopping || k.halted {
		return
	}
	if k.inFlight {
		// Never two at once. A periodic tick is dropped (the next one comes soon); a claim
		// for a wake or a lease end runs right after the cycle in flight, which may have
		// started before the release it answers.
		if trigger != TriggerInterval {
			k.queued = &trigger
		}
		return
	}
	k.inFlight = true
	req := store.CycleRequest{
		Node: k.cfg.Node, Platform: k.cfg.Platform, Lease: k.cfg.Timing.Lease,
		Held: append([]store.Held(nil), k.held...), Capacity: k.cfg.Capacity, NoClaim: k.draining,
	}
	if k.cfg.MaxHandOffs >= 0 {
		req.Share = func(v store.ClusterView) int { return FairShare(v, k.cfg.Node) }
		if len(k.handingOff) == 0 && !k.draining {
			bound := k.cfg.MaxHandOffs
			req.HandOffs = func(owned, share int) int { return HandOffCount(owned, share, bound) }
		}
	}
	self, root, cycle, clock := ctx.Self(), ctx.ActorSystem().Root, k.cfg.Cycle, k.cfg.Clock
	k.queued = nil
	// The cycle has its own deadline, shorter than the trust it grants (docs/design.md §2).
	cctx, cancel := context.WithTimeout(context.Background(), k.cfg.Timing.CycleDeadline())
	k.cancelCycle = cancel
	k.stopClaims = new(atomic.Bool)
	req.SkipClaim = k.stopClaims.Load
	// started is read before the transaction begins: trust is measured from here.
	started := clock.Now()
	go func() {
		res, err := cycle(cctx, req)
		cancel()
		root.Send(self, cycleDone{trigger: trigger, started: started, elapsed: clock.Since(started), res: res, err: err})
	}()
}

func (k *Keeper) finishCycle(ctx actor.Context, m cycleDone) {
	k.inFlight = false
	k.cancelCycle = nil
	report := CycleReport{Trigger: m.trigger, Started: m.started, Duration: m.elapsed, Err: m.err}
	if k.halted {
		// A halted node acts as a crashed one: nothing from a late cycle.
		if k.cfg.OnCycle != nil {
			report.Err = ErrHalted
			k.cfg.OnCycle(report)
		}
		return
	}
	switch {
	case m.err != nil:
		// Nothing changes: the gates close by themselves when their trust runs out.
		k.cfg.Logger.Warn().Err(m.err).Str("node", k.cfg.Node).Dur("elapsed", m.elapsed).Msg("lease cycle failed")
	case k.stopping:
		// Committed after shutdown began: release what it holds, start nothing.
		k.held = k.held[:0]
		for _, o := range m.res.Owned {
			k.held = append(k.held, store.Held{ID: o.ID, Epoch: o.Epoch})
		}
	default:
		report = k.apply(ctx, m, report)
		report.HandingOff = k.startHandOff(ctx, report.Owned, m.res.Share, m.res.HandOff)
	}
	if k.cfg.OnCycle != nil {
		k.cfg.OnCycle(report)
	}
	if k.stopping {
		k.stopAccounts(ctx)
		return
	}
	if m.err == nil {
		k.scheduleLeaseEnd(ctx, m.started.Add(m.elapsed), m.res.NextForeignExpiry)
	}
	if q := k.queued; q != nil {
		k.startCycle(ctx, *q)
	}
}

// apply publishes a committed cycle: lost accounts' gates are revoked before any gate is
// confirmed, so an account that moved away never sees an open gate again. An account
// whose gate was fenced (the trade server saw a newer token) is neither confirmed nor
// renewed at that epoch: its lease runs out and it is claimed again with a new epoch.
func (k *Keeper) apply(ctx actor.Context, m cycleDone, report CycleReport) CycleReport {
	lease := Lease{Started: m.started, Config: k.cfg.Timing}
	owned := make(map[int64]OwnedAccount, len(m.res.Owned))
	now := map[int64]int64{}
	for _, o := range m.res.Owned {
		now[o.ID] = o.Epoch
	}
	for id, g := range k.gates {
		if ep, ok := now[id]; !ok || ep != k.epochs[id] {
			g.Revoke()
			delete(k.gates, id)
			delete(k.epochs, id)
			report.Lost++
		}
	}
	k.held = k.held[:0]
	for _, o := range m.res.Owned {
		if ep, ok := k.handedOff[o.ID]; ok && ep == o.Epoch {
			continue // renewed before its hand-off's release committed: released since
		}
		if ep, ok := k.handingOff[o.ID]; ok && ep == o.Epoch {
			// Renewed until its release commits (its actor may still be finishing an
			// order), but never confirmed or owned again.
			k.held = append(k.held, store.Held{ID: o.ID, Epoch: o.Epoch})
			continue
		}
		g := k.gates[o.ID]
		if g == nil {
			g = NewEpochGate(k.cfg.Clock, o.Epoch)
			k.gates[o.ID] = g
			k.epochs[o.ID] = o.Epoch
		}
		if g.Fenced() {
			continue // not renewed again at this epoch
		}
		g.Confirm(lease)
		owned[o.ID] = OwnedAccount{Epoch: o.Epoch, ConfigVersion: o.ConfigVersion, Gate: g}
		k.held = append(k.held, store.Held{ID: o.ID, Epoch: o.Epoch})
	}
	for id, ep := range k.handedOff {
		if now[id] != ep {
			// This cycle did not renew that lease: later ones cannot (it is not held).
			delete(k.handedOff, id)
		}
	}
	report.Lost -= len(m.res.Released) // released on purpose, not lost
	k.cfg.NodeGate.Confirm(lease)
	report.Owned, report.Claimed, report.Renewed, report.Released = len(owned), m.res.Claimed, m.res.Renewed, len(m.res.Released)
	report.Share, report.LiveNodes = m.res.Share, len(m.res.View.Nodes)
	if m.res.Claimed > 0 || report.Lost > 0 || len(m.res.Released) > 0 {
		k.cfg.Logger.Info().Str("node", k.cfg.Node).Int("owned", len(owned)).Int("claimed", m.res.Claimed).
			Int("released", len(m.res.Released)).Int("lost", report.Lost).Dur("elapsed", m.elapsed).Msg("lease cycle")
	}
	ctx.Send(k.cfg.Supervisor, Owned{Accounts: owned, TrustedUntil: lease.TrustedUntil()})
	return report
}

// stopAccounts closes every gate, asks the Supervisor to stop every account, flushes the
// statuses, then releases the leases of the accounts whose actors ended with nothing in
// flight, all within the shutdown's one budget (ShutdownSplit): the release always gets
// its share. An account whose actor had not ended, or ended with an order of unknown
// outcome that may still execute, is not released: its lease runs out as a crashed node's
// would, after that order's deadline (a new owner could otherwise copy beside it).
func (k *Keeper) stopAccounts(ctx actor.Context) {
	accountsBy, flushBy := ShutdownSplit(time.Now(), k.shutdownBy)
	// No order starts from here: closed before the actors are asked to stop (as in a
	// hand-off), so none can begin while they wind down.
	for _, g := range k.gates {
		g.Revoke()
	}
	k.cfg.NodeGate.Revoke()
	f := ctx.RequestFuture(k.cfg.Supervisor, StopAccounts{By: accountsBy}, max(time.Until(flushBy), time.Millisecond))
	ctx.ReenterAfter(f, func(res any, err error) {
		stopped, ok := res.(AccountsStopped)
		if err == nil && !ok {
			err = fmt.Errorf("unexpected answer %T", res)
		}
		k.held = releasable(k.held, stopped, err, k.cfg.Clock.Now())
		switch {
		case err != nil:
			k.cfg.Logger.Warn().Err(err).Msg("accounts did not answer the stop; no lease released, they run out instead")
		case len(stopped.Running) > 0 || len(stopped.HeldBack) > 0:
			k.cfg.Logger.Warn().Int("running", len(stopped.Running)).Int("held_back", len(stopped.HeldBack)).
				Msg("some accounts did not stop in time or have an order of unknown outcome in flight; their leases run out instead")
		}
		if k.cfg.Flusher == nil {
			k.release(ctx)
			return
		}
		ff := ctx.RequestFuture(k.cfg.Flusher, Flush{}, max(time.Until(flushBy), time.Millisecond))
		ctx.ReenterAfter(ff, func(res any, err error) {
			if f, ok := res.(Flushed); ok && f.Err != nil {
				err = f.Err
			}
			if err != nil {
				k.cfg.Logger.Warn().Err(err).Msg("final status flush failed; releasing anyway")
			}
			k.release(ctx)
		})
	})
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

// release gives back every held lease, off the mailbox, with what is left of the budget.
func (k *Keeper) release(ctx actor.Context) {
	held, release, node := append([]store.Held(nil), k.held...), k.cfg.Release, k.cfg.Node
	self, root := ctx.Self(), ctx.ActorSystem().Root
	rctx, cancel := context.WithDeadline(context.Background(), releaseBy(time.Now(), k.shutdownBy))
	go func() {
		defer cancel()
		n, err := release(rctx, node, held)
		if err != nil {
			err = fmt.Errorf("release leases: %w", err)
		}
		root.Send(self, released{n: n, err: err})
	}()
}

// startHandOff begins to hand back the surplus over the node's fair share (HandOffCount:
// hysteresis, never below the share, at most MaxHandOffs per cycle), one hand-off at a
// time. The accounts' gates are revoked at once (no new order), their actors stop (each
// finishes its order in flight), the statuses and ticket maps are flushed, and only then
// are the leases released by (id, epoch), which wakes the other nodes. It returns how many
// accounts it began to hand off.
func (k *Keeper) startHandOff(ctx actor.Context, owned, share int, picked []store.Held) int {
	if len(k.handingOff) > 0 || k.draining || k.stopping || k.cfg.MaxHandOffs < 0 || share <= 0 {
		return 0
	}
	n := HandOffCount(owned, share, k.cfg.MaxHandOffs)
	if n == 0 {
		return 0
	}
	// The cycle picked them (whole masters with the fewest followers here first), among
	// the leases it renewed; those this node still holds confirmed go. Without a pick the
	// highest ids go.
	held := map[int64]int64{}
	for _, h := range k.held {
		held[h.ID] = h.Epoch
	}
	var handOff []store.Held
	for _, h := range picked {
		if ep, ok := held[h.ID]; ok && ep == h.Epoch && len(handOff) < n {
			handOff = append(handOff, h)
		}
	}
	for i := len(k.held) - 1; i >= 0 && len(handOff) < n && len(picked) == 0; i-- {
		handOff = append(handOff, k.held[i])
	}
	if len(handOff) == 0 {
		return 0
	}
	ids := make([]int64, len(handOff))
	for i, h := range handOff {
		ids[i] = h.ID
		k.handingOff[h.ID] = h.Epoch
		if g := k.gates[h.ID]; g != nil {
			g.Revoke()
		}
		delete(k.gates, h.ID)
		delete(k.epochs, h.ID)
	}
	k.cfg.Logger.Info().Str("node", k.cfg.Node).Int("accounts", len(ids)).Int("share", share).Int("owned", owned).Msg("handing off accounts over the fair share")
	f := ctx.RequestFuture(k.cfg.Supervisor, StopSome{IDs: ids}, k.cfg.HandOffTimeout)
	ctx.ReenterAfter(f, func(res any, err error) {
		if k.stopping || k.halted {
			return // the shutdown releases them with the rest; a halted node lets them expire
		}
		if err != nil {
			// An actor may still be sending: releasing now could let a new owner send
			// beside it. They are no longer renewed, so their leases run out instead.
			k.cfg.Logger.Warn().Err(err).Int("accounts", len(ids)).Msg("hand-off: accounts did not stop in time; their leases will run out instead")
			k.finishHandOff(handedOff{held: handOff, err: err})
			return
		}
		stopped, _ := res.(SomeStopped)
		if handOff = k.holdBack(ctx, handOff, stopped.HeldBack); len(handOff) == 0 {
			return
		}
		if k.cfg.Flusher == nil {
			k.releaseHandOff(ctx, handOff)
			return
		}
		ff := ctx.RequestFuture(k.cfg.Flusher, Flush{}, k.cfg.HandOffTimeout)
		ctx.ReenterAfter(ff, func(res any, err error) {
			if f, ok := res.(Flushed); ok && f.Err != nil {
				err = f.Err
			}
			if k.stopping || k.halted {
				return
			}
			if err != nil {
				// Rows still queued (statuses, the ticket map) would be lost to a release
				// now, and the new owner would reconcile without them. The node stays, so
				// nothing forces the release: they are no longer renewed and run out
				// within one lease, while the writer may still land its queue.
				k.cfg.Logger.Warn().Err(err).Int("accounts", len(ids)).Msg("hand-off: status flush failed; their leases will run out instead")
				k.finishHandOff(handedOff{held: handOff, err: err})
				return
			}
			k.releaseHandOff(ctx, handOff)
		})
	})
	return len(ids)
}

// errHeldBack ends the hand-off of accounts whose actors stopped with an order of unknown
// outcome in flight.
var errHeldBack = errors.New("an order of unknown outcome may still execute")

// releaseHeldBack releases hand-offs held back by an order of unknown outcome, once that
// order can no longer execute.
type releaseHeldBack struct{ held []store.Held }

// holdBack takes out of a hand-off the accounts whose actors stopped with an order of
// unknown outcome that may still execute (heldBack: until when, on the keeper's clock),
// and returns the rest. Those are no longer renewed, and are released only once the last
// such order can no longer execute (unless the node stops or halts first: then they run
// out): a new owner that claimed them earlier could copy beside that order.
func (k *Keeper) holdBack(ctx actor.Context, handOff []store.Held, heldBack map[int64]time.Time) []store.Held {
	now, last := k.cfg.Clock.Now(), time.Time{}
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
	k.finishHandOff(handedOff{held: back, err: errHeldBack})
	self, root := ctx.Self(), ctx.ActorSystem().Root
	time.AfterFunc(last.Sub(now), func() { root.Send(self, releaseHeldBack{held: back}) })
	return handOff
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// releaseHandOff releases the handed-off leases off the mailbox.
func (k *Keeper) releaseHandOff(ctx actor.Context, held []store.Held) {
	self, root, handOff, node := ctx.Self(), ctx.ActorSystem().Root, k.cfg.HandOff, k.cfg.Node
	rctx, cancel := context.WithTimeout(context.Background(), k.cfg.Timing.CycleDeadline())
	go func() {
		defer cancel()
		n, err := handOff(rctx, node, held)
		root.Send(self, handedOff{held: held, n: n, err: err})
	}()
}

// finishHandOff forgets the handed-off accounts: they are not renewed again, and a cycle
// that renewed one before the release committed is ignored for it. After a failed stop,
// flush or release their leases run out by themselves.
func (k *Keeper) finishHandOff(m handedOff) {
	gone := map[int64]bool{}
	for _, h := range m.held {
		gone[h.ID] = true
		delete(k.handingOff, h.ID)
		k.handedOff[h.ID] = h.Epoch
	}
	k.held = slices.DeleteFunc(k.held, func(h store.Held) bool { return gone[h.ID] })
	switch {
	case errors.Is(m.err, errHeldBack):
		k.cfg.Logger.Info().Int("accounts", len(m.held)).Msg("hand-off held back until an order of unknown outcome can no longer execute")
		return
	case m.err != nil:
		k.cfg.Logger.Warn().Int("accounts", len(m.held)).Err(m.err).Msg("hand-off ended without a release; the leases will run out instead")
		return
	}
	if k.cfg.OnHandOff != nil {
		k.cfg.OnHandOff(int(m.n))
	}
}
