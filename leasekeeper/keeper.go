package leasekeeper

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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

// ErrHalted is the error of a cycle that ended after Halt (its result was ignored) and
// of a Shutdown after Halt (nothing is stopped or released: the leases run out).
var ErrHalted = errors.New("leasekeeper: node halted")

// tick starts a cycle; cycleDone carries its result back into the actor.
type tick struct{ trigger Trigger }

type cycleDone struct {
	trigger Trigger
	started time.Time // the keeper's clock, read before the query began
	elapsed time.Duration
	res     store.CycleResult
	err     error
	fenced  map[int64]int64 // the gates found fenced when the result arrived: id → epoch
}

// releaseHeldBack releases hand-offs held back by an order of unknown outcome, once that
// order can no longer execute.
type releaseHeldBack struct{ held []store.Held }

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

// Keeper is the LeaseKeeper actor: the shell around the core (core.go). It turns its
// messages into the core's inputs and carries out what the core asks for: the gates, the
// cycle's query (in a goroutine; its result comes back as a message), the timers, the
// requests to the Supervisor and the StatusWriter, and the releases.
type Keeper struct {
	cfg         KeeperConfig
	core        *core
	gates       map[int64]*Gate
	cancelCycle context.CancelFunc // ends the cycle in flight (halt, actor stop)
	stopClaims  *atomic.Bool       // set at shutdown: the cycle in flight skips its claim
	shutdown    []*actor.PID       // futures waiting for ShutdownDone
	stopTick    chan struct{}
	// Claims outside the interval: a wake (coalesced by the core: one timer at a time) and
	// the end of the earliest foreign lease (one timer, replaced by every cycle).
	wakeTimer     *time.Timer
	leaseEndTimer *time.Timer
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
	cc := coreConfig{
		Node: cfg.Node, Platform: cfg.Platform, Capacity: cfg.Capacity, Timing: cfg.Timing,
		MaxHandOffs: cfg.MaxHandOffs, HandOffTimeout: cfg.HandOffTimeout, Flush: cfg.Flusher != nil,
	}
	return func() actor.Actor {
		return &Keeper{cfg: cfg, core: newCore(cc), gates: map[int64]*Gate{}}
	}
}

// now reads both clocks for an input of the core.
func (k *Keeper) now() instant { return instant{Clock: k.cfg.Clock.Now(), Wall: time.Now()} }

// Receive implements actor.Actor.
func (k *Keeper) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		k.startTicker(ctx)
	case *actor.Stopping:
		k.stopTimers()
		if k.cancelCycle != nil {
			k.cancelCycle()
		}
	case tick:
		if m.trigger == TriggerWake {
			k.wakeTimer = nil
		}
		k.exec(ctx, k.core.tick(m.trigger))
	case Wake:
		k.exec(ctx, k.core.wake())
	case cycleDone:
		k.cancelCycle = nil
		m.fenced = k.fencedGates()
		k.exec(ctx, k.core.cycleDone(m, k.now()))
	case SetDraining:
		k.core.setDraining(m.Draining)
	case Halt:
		k.exec(ctx, k.core.halt())
		ctx.Respond(Halted{})
	case Shutdown:
		k.shutdown = append(k.shutdown, ctx.Sender())
		k.exec(ctx, k.core.shutdown(m.Deadline, k.now()))
	case handedOff:
		k.exec(ctx, k.core.handOffDone(m))
	case releaseHeldBack:
		k.exec(ctx, k.core.releaseHeldBack(m.held))
	case released:
		k.exec(ctx, k.core.released(m.n, m.err))
	}
}

// fencedGates are the gates an order found fenced (id → epoch), for the core.
func (k *Keeper) fencedGates() map[int64]int64 {
	var fenced map[int64]int64
	for id, g := range k.gates {
		if g.Fenced() {
			if fenced == nil {
				fenced = map[int64]int64{}
			}
			fenced[id] = g.Epoch()
		}
	}
	return fenced
}

// exec carries out a ready in the order of its fields: every gate first, so that the
// Supervisor hears of an account, or is asked to stop one, only after its gate says so.
func (k *Keeper) exec(ctx actor.Context, r ready) {
	for _, op := range r.Gates {
		k.gate(op)
	}
	if r.Owned != nil {
		owned := make(map[int64]OwnedAccount, len(r.Owned.Accounts))
		for _, a := range r.Owned.Accounts {
			owned[a.ID] = OwnedAccount{Epoch: a.Epoch, ConfigVersion: a.ConfigVersion, Gate: k.gates[a.ID]}
		}
		ctx.Send(k.cfg.Supervisor, Owned{Accounts: owned, TrustedUntil: r.Owned.TrustedUntil})
	}
	for _, op := range r.HandOffGates {
		k.gate(op)
	}
	if r.StopTimers {
		k.stopTimers()
	}
	if r.CancelCycle && k.cancelCycle != nil {
		k.cancelCycle()
	}
	if r.SkipClaim {
		k.stopClaims.Store(true)
	}
	if r.StopSome != nil {
		k.stopSome(ctx, r.StopSome)
	}
	for _, n := range r.Notes {
		k.log(n)
	}
	if r.Report != nil && k.cfg.OnCycle != nil {
		k.cfg.OnCycle(*r.Report)
	}
	if r.StopAccounts != nil {
		k.stopAccounts(ctx, r.StopAccounts)
	}
	if r.Flush != nil {
		k.flush(ctx, r.Flush)
	}
	if r.Release != nil {
		k.release(ctx, r.Release)
	}
	if r.HandOff != nil {
		k.releaseHandOff(ctx, r.HandOff)
	}
	if r.HoldBack != nil {
		self, root, held := ctx.Self(), ctx.ActorSystem().Root, r.HoldBack.Held
		time.AfterFunc(r.HoldBack.In, func() { root.Send(self, releaseHeldBack{held: held}) })
	}
	if r.LeaseEnd != nil {
		k.scheduleLeaseEnd(ctx, r.LeaseEnd.Done, r.LeaseEnd.Wait)
	}
	if r.Wake {
		self, root := ctx.Self(), ctx.ActorSystem().Root
		k.wakeTimer = time.AfterFunc(rand.N(k.cfg.WakeJitter), func() { root.Send(self, tick{trigger: TriggerWake}) })
	}
	if r.Cycle != nil {
		k.startCycle(ctx, r.Cycle)
	}
	if r.ShutdownDone != nil {
		for _, pid := range k.shutdown {
			if pid != nil {
				ctx.Send(pid, *r.ShutdownDone)
			}
		}
		k.shutdown = nil
	}
	if r.HandedOff != nil && k.cfg.OnHandOff != nil {
		k.cfg.OnHandOff(*r.HandedOff)
	}
}

// gate carries out one gate operation.
func (k *Keeper) gate(op gateOp) {
	g := k.cfg.NodeGate
	if !op.Node {
		if op.Kind == gateCreate {
			k.gates[op.ID] = NewEpochGate(k.cfg.Clock, op.Epoch)
			return
		}
		if g = k.gates[op.ID]; g == nil {
			return
		}
	}
	switch op.Kind {
	case gateConfirm:
		g.Confirm(op.Lease)
	case gateRevoke:
		g.Revoke()
	case gateForget:
		delete(k.gates, op.ID)
	case gateFence:
		g.Fence()
	}
}

// log writes a note of the core.
func (k *Keeper) log(n note) {
	ev := k.cfg.Logger.Info()
	if n.Warn {
		ev = k.cfg.Logger.Warn()
	}
	if n.Err != nil {
		ev = ev.Err(n.Err)
	}
	for _, f := range n.Fields {
		switch v := f.Val.(type) {
		case int:
			ev = ev.Int(f.Key, v)
		case time.Duration:
			ev = ev.Dur(f.Key, v)
		case string:
			ev = ev.Str(f.Key, v)
		default:
			ev = ev.Interface(f.Key, v)
		}
	}
	ev.Msg(n.Msg)
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

func (k *Keeper) stopTimers() {
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
}

// scheduleLeaseEnd replaces the claim for the moment the earliest foreign lease ends: the
// database measured wait from a moment before the cycle's result arrived (done, on this
// node's clock), so done + wait is never before the lease's end.
func (k *Keeper) scheduleLeaseEnd(ctx actor.Context, done time.Time, wait time.Duration) {
	if k.leaseEndTimer != nil {
		k.leaseEndTimer.Stop()
		k.leaseEndTimer = nil
	}
	if wait <= 0 {
		return
	}
	self, root := ctx.Self(), ctx.ActorSystem().Root
	k.leaseEndTimer = time.AfterFunc(leaseEndDelay(k.cfg.Clock, done, wait), func() { root.Send(self, tick{trigger: TriggerLeaseEnd}) })
}

// leaseEndDelay is how long from now until wait after done, plus the margin.
func leaseEndDelay(clock Clock, done time.Time, wait time.Duration) time.Duration {
	return max(wait+leaseEndMargin-clock.Since(done), 0)
}

// startCycle runs the cycle the core asked for off the mailbox; its result comes back as
// cycleDone.
func (k *Keeper) startCycle(ctx actor.Context, a *cycleAsk) {
	self, root, cycle, clock, trigger, req := ctx.Self(), ctx.ActorSystem().Root, k.cfg.Cycle, k.cfg.Clock, a.Trigger, a.Req
	cctx, cancel := context.WithTimeout(context.Background(), a.Deadline)
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

// stopAccounts asks the Supervisor to stop every account; its answer goes to the core.
func (k *Keeper) stopAccounts(ctx actor.Context, a *stopAccountsAsk) {
	f := ctx.RequestFuture(k.cfg.Supervisor, StopAccounts{By: a.By}, a.Timeout)
	ctx.ReenterAfter(f, func(res any, err error) {
		stopped, ok := res.(AccountsStopped)
		if err == nil && !ok {
			err = fmt.Errorf("unexpected answer %T", res)
		}
		k.exec(ctx, k.core.accountsStopped(stopped, err, k.now()))
	})
}

// stopSome asks the Supervisor to stop the accounts handed off; its answer goes to the core.
func (k *Keeper) stopSome(ctx actor.Context, a *stopSomeAsk) {
	f := ctx.RequestFuture(k.cfg.Supervisor, StopSome{IDs: a.IDs}, a.Timeout)
	ctx.ReenterAfter(f, func(res any, err error) {
		stopped, _ := res.(SomeStopped)
		k.exec(ctx, k.core.someStopped(stopped, err, k.now()))
	})
}

// flush asks the StatusWriter to flush; its answer goes to the core.
func (k *Keeper) flush(ctx actor.Context, a *flushAsk) {
	f := ctx.RequestFuture(k.cfg.Flusher, Flush{}, a.Timeout)
	ctx.ReenterAfter(f, func(res any, err error) {
		if f, ok := res.(Flushed); ok && f.Err != nil {
			err = f.Err
		}
		k.exec(ctx, k.core.flushed(a.For, err, k.now()))
	})
}

// release gives back the leases at shutdown, off the mailbox.
func (k *Keeper) release(ctx actor.Context, a *releaseAsk) {
	held, release, node := a.Held, k.cfg.Release, k.cfg.Node
	self, root := ctx.Self(), ctx.ActorSystem().Root
	rctx, cancel := context.WithDeadline(context.Background(), a.By)
	go func() {
		defer cancel()
		n, err := release(rctx, node, held)
		if err != nil {
			err = fmt.Errorf("release leases: %w", err)
		}
		root.Send(self, released{n: n, err: err})
	}()
}

// releaseHandOff releases the handed-off leases off the mailbox.
func (k *Keeper) releaseHandOff(ctx actor.Context, a *handOffAsk) {
	self, root, handOff, node, held := ctx.Self(), ctx.ActorSystem().Root, k.cfg.HandOff, k.cfg.Node, a.Held
	rctx, cancel := context.WithTimeout(context.Background(), a.Timeout)
	go func() {
		defer cancel()
		n, err := handOff(rctx, node, held)
		root.Send(self, handedOff{held: held, n: n, err: err})
	}()
}
