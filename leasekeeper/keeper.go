package leasekeeper

import (
	"context"
	"fmt"
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
}

// tick starts a cycle; cycleDone carries its result back into the actor.
type tick struct{}

type cycleDone struct {
	started time.Time
	elapsed time.Duration
	res     store.CycleResult
	err     error
}

type released struct {
	n   int64
	err error
}

// Keeper is the LeaseKeeper actor. It runs one lease cycle per interval, off its own
// mailbox (the query runs in a goroutine and its result comes back as a message), confirms
// the gates, and tells the Supervisor what it owns.
type Keeper struct {
	cfg      KeeperConfig
	held     []store.Held
	gates    map[int64]*Gate
	epochs   map[int64]int64
	inFlight bool
	draining bool
	stopping bool
	shutdown []*actor.PID // futures waiting for ShutdownDone
	stopTick chan struct{}
}

// NewKeeper returns the actor's producer.
func NewKeeper(cfg KeeperConfig) actor.Producer {
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	return func() actor.Actor {
		return &Keeper{cfg: cfg, gates: map[int64]*Gate{}, epochs: map[int64]int64{}}
	}
}

// Receive implements actor.Actor.
func (k *Keeper) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		k.startTicker(ctx)
	case *actor.Stopping:
		k.stopTicker()
	case tick:
		k.startCycle(ctx)
	case cycleDone:
		k.finishCycle(ctx, m)
	case SetDraining:
		k.draining = m.Draining
	case Shutdown:
		k.shutdown = append(k.shutdown, ctx.Sender())
		if !k.stopping {
			k.stopping = true
			k.stopTicker()
			if !k.inFlight {
				k.stopAccounts(ctx)
			}
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
}

func (k *Keeper) startCycle(ctx actor.Context) {
	if k.inFlight || k.stopping {
		return // a slow cycle is still running: never two at once
	}
	k.inFlight = true
	req := store.CycleRequest{
		Node: k.cfg.Node, Platform: k.cfg.Platform, Lease: k.cfg.Timing.Lease,
		Held: append([]store.Held(nil), k.held...), Capacity: k.cfg.Capacity, NoClaim: k.draining,
	}
	self, root, pool, clock, deadline := ctx.Self(), ctx.ActorSystem().Root, k.cfg.Pool, k.cfg.Clock, k.cfg.Timing.CycleDeadline()
	// started is read before the transaction begins: trust is measured from here.
	started := clock.Now()
	go func() {
		cctx, cancel := context.WithTimeout(context.Background(), deadline)
		res, err := store.LeaseCycle(cctx, pool, req)
		cancel()
		root.Send(self, cycleDone{started: started, elapsed: clock.Since(started), res: res, err: err})
	}()
}

func (k *Keeper) finishCycle(ctx actor.Context, m cycleDone) {
	k.inFlight = false
	report := CycleReport{Started: m.started, Duration: m.elapsed, Err: m.err}
	if m.err != nil {
		// Nothing changes: the gates close by themselves when their trust runs out.
		k.cfg.Logger.Warn().Err(m.err).Str("node", k.cfg.Node).Dur("elapsed", m.elapsed).Msg("lease cycle failed")
	} else {
		report = k.apply(ctx, m, report)
	}
	if k.cfg.OnCycle != nil {
		k.cfg.OnCycle(report)
	}
	if k.stopping {
		k.stopAccounts(ctx)
	}
}

// apply publishes a committed cycle: lost accounts' gates are revoked before any gate is
// confirmed, so an account that moved away never sees an open gate again.
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
		g := k.gates[o.ID]
		if g == nil {
			g = NewGate(k.cfg.Clock)
			k.gates[o.ID] = g
			k.epochs[o.ID] = o.Epoch
		}
		g.Confirm(lease)
		owned[o.ID] = OwnedAccount{Epoch: o.Epoch, ConfigVersion: o.ConfigVersion, Gate: g}
		k.held = append(k.held, store.Held{ID: o.ID, Epoch: o.Epoch})
	}
	report.Lost -= len(m.res.Released) // released on purpose, not lost
	k.cfg.NodeGate.Confirm(lease)
	report.Owned, report.Claimed, report.Renewed, report.Released = len(m.res.Owned), m.res.Claimed, m.res.Renewed, len(m.res.Released)
	if m.res.Claimed > 0 || report.Lost > 0 || len(m.res.Released) > 0 {
		k.cfg.Logger.Info().Str("node", k.cfg.Node).Int("owned", len(owned)).Int("claimed", m.res.Claimed).
			Int("released", len(m.res.Released)).Int("lost", report.Lost).Dur("elapsed", m.elapsed).Msg("lease cycle")
	}
	ctx.Send(k.cfg.Supervisor, Owned{Accounts: owned, TrustedUntil: lease.TrustedUntil()})
	return report
}

// stopAccounts asks the Supervisor to stop every account, then releases the leases.
func (k *Keeper) stopAccounts(ctx actor.Context) {
	f := ctx.RequestFuture(k.cfg.Supervisor, StopAccounts{}, 60*time.Second)
	ctx.ReenterAfter(f, func(_ any, err error) {
		if err != nil {
			k.cfg.Logger.Warn().Err(err).Msg("accounts did not all stop in time; releasing anyway")
		}
		for _, g := range k.gates {
			g.Revoke()
		}
		k.cfg.NodeGate.Revoke()
		if k.cfg.Flusher == nil {
			k.release(ctx)
			return
		}
		ff := ctx.RequestFuture(k.cfg.Flusher, Flush{}, 30*time.Second)
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

// release gives back every held lease, off the mailbox.
func (k *Keeper) release(ctx actor.Context) {
	held, pool, node := append([]store.Held(nil), k.held...), k.cfg.Pool, k.cfg.Node
	self, root := ctx.Self(), ctx.ActorSystem().Root
	go func() {
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n, err := store.ReleaseAll(rctx, pool, node, held)
		if err != nil {
			err = fmt.Errorf("release leases: %w", err)
		}
		root.Send(self, released{n: n, err: err})
	}()
}
