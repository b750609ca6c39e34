package actors

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/internal/copytrace"
	"github.com/snapcopier/copier/leasekeeper"
	"github.com/snapcopier/copier/store"
)

// Config is a node's configuration. Zero values take the defaults noted.
type Config struct {
	// NodeID names this node in node_id; default "<platform>-<hostname>". Two processes
	// may share one: leases are renewed by (id, epoch) pairs, never by node id alone.
	NodeID   string
	Platform string // required: the platform of the followers to claim ("mt5", "sim", ...)
	Capacity int    // most followers to hold; 0 claims none (a node that only renews and releases)
	Lease    leasekeeper.Config
	// ReconcileEvery repairs drift (manual trades, stops hit) even without a gap (default
	// 5 min; negative disables).
	ReconcileEvery       time.Duration
	ReconcileConcurrency int           // default 16
	ReconcileRate        float64       // reconciles started per second (default 200)
	OrderTimeout         time.Duration // per broker call (default 10 s)
	FlushEvery           time.Duration // StatusWriter batch period (default 1 s)
	// StatusEvery is the least time between two status rows (and positions snapshots) of
	// an account whose phase and error did not change (default 5 s): the figures of a busy
	// account (balance, equity, last copy, positions) are written at most this often,
	// each time the latest; a change of phase or error goes with the next flush. The
	// node's own console shows the live figures.
	StatusEvery time.Duration
	// EquityEvery is how often a follower with a stop-out limit (drawdown, daily loss)
	// reads its equity between reconciles (default 5 s).
	EquityEvery time.Duration
	// SymbolsMaxAge is how long the symbol specifications an earlier reconcile read from a
	// session are reused (default 10 min): a master's by every reconcile of its followers,
	// a follower's by its periodic repairs (a reconcile of any other cause reads them again).
	SymbolsMaxAge time.Duration
	// NoListen turns the release notifications off (a pooler in transaction mode cannot
	// deliver them): released accounts are then claimed at the interval's pace. By
	// default the node LISTENs on a connection of its own and claims soon after another
	// node releases accounts of its platform.
	NoListen bool
	// MaxHandOffs bounds the accounts handed back per lease cycle when the node holds more
	// than its fair share of the platform (its followers spread over the live nodes by
	// their capacities, plus a 5 % slack); default 500; negative turns fair share off (the
	// node claims up to its capacity and keeps what it holds).
	MaxHandOffs int
	// TicketHistory is how long a closed ticket-map row is kept (default 30 days): the
	// node deletes older ones every PruneEvery (default 10 min), so the table holds the
	// open copies and this much history instead of every copy ever made.
	// KeepTicketHistory keeps them all.
	TicketHistory time.Duration
	PruneEvery    time.Duration
}

// Deps are what a node talks to. Pool and Broker are required.
type Deps struct {
	Pool *pgxpool.Pool
	// LeasePool, when set, is the lease cycle's own pool (a connection or two reserved
	// for it), so that no console, status or account traffic can starve the cycle of a
	// connection; nil uses Pool.
	LeasePool *pgxpool.Pool
	Broker    broker.Broker
	Logger    zerolog.Logger
	Clock     leasekeeper.Clock
	// Credentials turns an account row into broker credentials; the default takes the
	// stored credentials as the password. Secrets are not kept after Connect.
	Credentials func(store.Account) (broker.Credentials, error)
	// Observe, when set, is called with every Signal, on the actor's goroutine: it must
	// return at once (record and go).
	Observe func(Signal)
	// Now is the node's one wall clock (default time.Now): every time an account's copy
	// logic sees, plans at, journals, writes or sends as an order deadline comes from it.
	// Lease trust is measured on Clock, which is monotonic and not a wall clock.
	Now func() time.Time
	// TraceCopies, when set, records every order's stages (copytrace.Record): for load
	// tests that account for where copies wait. Off (nil) in production.
	TraceCopies *copytrace.Recorder
}

// ErrConfig wraps every configuration error.
var ErrConfig = errors.New("invalid node configuration")

// Validate fills defaults and checks the configuration.
func (c *Config) Validate() error {
	if c.Platform == "" {
		return fmt.Errorf("%w: platform is required", ErrConfig)
	}
	if strings.TrimSpace(c.Platform) != c.Platform || strings.ContainsAny(c.Platform, " \t\n") {
		return fmt.Errorf("%w: platform %q must not contain spaces", ErrConfig, c.Platform)
	}
	if c.NodeID == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "localhost"
		}
		c.NodeID = c.Platform + "-" + host
	}
	if c.Capacity < 0 {
		return fmt.Errorf("%w: capacity must be ≥ 0, got %d", ErrConfig, c.Capacity)
	}
	if c.Lease == (leasekeeper.Config{}) {
		c.Lease = leasekeeper.DefaultConfig()
	}
	if err := c.Lease.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if c.ReconcileEvery == 0 {
		c.ReconcileEvery = 5 * time.Minute
	}
	if c.OrderTimeout <= 0 {
		c.OrderTimeout = 10 * time.Second
	}
	if c.FlushEvery <= 0 {
		c.FlushEvery = time.Second
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"equity-every", &c.EquityEvery, 5 * time.Second},
		{"status-every", &c.StatusEvery, 5 * time.Second},
		{"symbols-max-age", &c.SymbolsMaxAge, defaultSymbolsMaxAge},
		{"ticket-history", &c.TicketHistory, defaultTicketHistory},
		{"prune-every", &c.PruneEvery, defaultPruneEvery},
	} {
		if *d.v < 0 {
			return fmt.Errorf("%w: %s must be > 0, got %v", ErrConfig, d.name, *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	return nil
}

// engine is what every actor of one node shares (read-only after Start).
type engine struct {
	cfg         Config
	pool        *pgxpool.Pool
	broker      broker.Broker
	log         zerolog.Logger
	clock       leasekeeper.Clock
	credentials func(store.Account) (broker.Credentials, error)
	observe     func(Signal)
	wall        func() time.Time
	board       *board
	metrics     *Metrics
	supervisor  *actor.PID
	reconciler  *actor.PID
	writer      *actor.PID
	writes      *writeQueue         // the rows the AccountActors leave for the writer
	halted      atomic.Bool         // Halt: behave as a crashed process, send nothing more
	trace       *copytrace.Recorder // Deps.TraceCopies
	// loader reads AccountActors' configurations in batches, with few connections at
	// once, so a claim of thousands of accounts cannot take every pooled connection: the
	// lease cycle and the StatusWriter always find one (a starved cycle missed its
	// deadline at 20,000 followers and the node lost its own leases).
	loader  *actor.PID
	started time.Time // elapsed's origin
}

func (e *engine) now() time.Time { return e.wall() }

// elapsed is the time since the engine started, on Go's monotonic clock: the pace of the
// StatusWriter's reports (its ticker runs on the same clock).
func (e *engine) elapsed() time.Duration { return time.Since(e.started) }

func (e *engine) connect(ctx context.Context, a store.Account) (broker.Session, error) {
	creds, err := e.credentials(a)
	if err != nil {
		return nil, fmt.Errorf("account %d credentials: %w", a.ID, err)
	}
	s, err := e.broker.Connect(ctx, creds)
	if err != nil {
		return nil, fmt.Errorf("connect account %d: %w", a.ID, err)
	}
	return s, nil
}

// Node is a running copier node: embed it with Start, watch it with Snapshot and
// Subscribe, and end it with Stop.
type Node struct {
	e        *engine
	system   *actor.ActorSystem
	keeper   *actor.PID
	nodeGate *leasekeeper.Gate
	lastMu   sync.Mutex
	last     leasekeeper.CycleReport
	subsMu   sync.Mutex
	subs     map[chan NodeEvent]struct{}
	stopOnce sync.Once
	stopErr  error
	// The release listener: its own connection, ended by Stop and Halt.
	listening  atomic.Bool
	stopListen context.CancelFunc
	listenDone chan struct{}
	pruner     *historyPruner // ended by Stop and Halt
}

// NodeEvent is a live update for consoles.
type NodeEvent struct {
	Time  time.Time
	Cycle leasekeeper.CycleReport
}

// Start validates cfg and starts the node's actors. The first lease cycle runs at once.
func Start(ctx context.Context, cfg Config, deps Deps) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Pool == nil || deps.Broker == nil {
		return nil, fmt.Errorf("%w: a database pool and a broker are required", ErrConfig)
	}
	if deps.Clock == nil {
		if err := leasekeeper.CheckSystemClock(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		deps.Clock = leasekeeper.SystemClock{}
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Credentials == nil {
		deps.Credentials = func(a store.Account) (broker.Credentials, error) {
			return broker.Credentials{Login: a.Login, Server: a.Server, Password: string(a.Credentials), FIX: FIXSession(a.FIX)}, nil
		}
	}
	log := deps.Logger.With().Str("node", cfg.NodeID).Logger()
	e := &engine{cfg: cfg, started: time.Now(), pool: deps.Pool, broker: deps.Broker, log: log, clock: deps.Clock, credentials: deps.Credentials, observe: deps.Observe, wall: deps.Now, trace: deps.TraceCopies,
		board: &board{}, metrics: &Metrics{}, writes: &writeQueue{}}
	system := actor.NewActorSystem(actor.WithLoggerFactory(slogBridge(log)))
	n := &Node{e: e, system: system, nodeGate: leasekeeper.NewGate(deps.Clock), subs: map[chan NodeEvent]struct{}{}}
	root := system.Root
	e.writer = root.Spawn(actor.PropsFromProducer(newStatusWriter(e), actor.WithDispatcher(mailboxDispatcher())))
	e.loader = root.Spawn(actor.PropsFromProducer(newLoader(e, min(4, int(deps.Pool.Config().MaxConns)-2), 64)))
	e.reconciler = root.Spawn(actor.PropsFromProducer(newReconciler(reconcilerConfig{
		Concurrency: cfg.ReconcileConcurrency, RatePerSec: cfg.ReconcileRate, FetchTimeout: cfg.OrderTimeout,
		SymbolsMaxAge: cfg.SymbolsMaxAge, Now: e.now,
	})))
	e.supervisor = root.Spawn(actor.PropsFromProducer(newSupervisor(e), actor.WithSupervisor(stopOnFailure())))
	n.keeper = root.Spawn(actor.PropsFromProducer(leasekeeper.NewKeeper(leasekeeper.KeeperConfig{
		Node: cfg.NodeID, Platform: cfg.Platform, Capacity: cfg.Capacity, Timing: cfg.Lease, Pool: cmp.Or(deps.LeasePool, deps.Pool),
		Clock: deps.Clock, NodeGate: n.nodeGate, Supervisor: e.supervisor, Flusher: e.writer, Logger: log,
		OnCycle: n.onCycle, OnHandOff: func(released int) { e.metrics.HandOffs.Add(int64(released)) },
		MaxHandOffs: cfg.MaxHandOffs,
	})))
	n.listen(cmp.Or(deps.LeasePool, deps.Pool))
	n.pruner = startPruner(e, deps.Pool)
	if cfg.Capacity == 0 {
		log.Warn().Msg("capacity 0: this node claims no accounts")
	}
	log.Info().Str("platform", cfg.Platform).Int("capacity", cfg.Capacity).Dur("lease", cfg.Lease.Lease).
		Dur("fence", cfg.Lease.Fence).Dur("interval", cfg.Lease.Interval).Msg("node started")
	return n, nil
}

// listen wakes the keeper whenever another node releases accounts of this platform, and
// whenever the listener (re)connects, since notifications sent while it was away are lost.
// It holds a connection of its own, outside every pool, for as long as the node runs.
func (n *Node) listen(pool *pgxpool.Pool) {
	n.listenDone = make(chan struct{})
	if n.e.cfg.NoListen {
		close(n.listenDone)
		n.stopListen = func() {}
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.stopListen = cancel
	cfg := pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = "copier-listen"
	wake := func() { n.system.Root.Send(n.keeper, leasekeeper.Wake{}) }
	reconnect := false
	go func() {
		defer close(n.listenDone)
		store.ListenReleases(ctx, cfg, store.ListenOptions{
			OnRelease: func(r store.Released) {
				if r.Platform == n.e.cfg.Platform && r.Node != n.e.cfg.NodeID {
					n.e.metrics.Wakes.Add(1)
					wake()
				}
			},
			OnState: func(up bool) {
				n.listening.Store(up)
				if up && reconnect {
					wake() // releases sent while it was away were lost
				} else if up {
					reconnect = true // the first cycle at start claims what is free
				} else if ctx.Err() == nil { // a stop ends the connection: not lost, and quiet
					n.e.log.Warn().Msg("release listener lost its connection; reconnecting (claims follow the interval meanwhile)")
				}
			},
		})
	}()
}

// Listening reports whether the node receives release notifications now.
func (n *Node) Listening() bool { return n.listening.Load() }

func (n *Node) endListen() {
	n.stopListen()
	<-n.listenDone
	n.listening.Store(false)
}

func (n *Node) onCycle(r leasekeeper.CycleReport) {
	m := n.e.metrics
	m.Cycles.Add(1)
	switch r.Trigger {
	case leasekeeper.TriggerWake:
		m.CyclesWoken.Add(1)
	case leasekeeper.TriggerLeaseEnd:
		m.CyclesAtLeaseEnd.Add(1)
	}
	m.cycle.observe(r.Duration)
	if r.Err != nil {
		m.CycleFailures.Add(1)
	} else {
		m.Claims.Add(int64(r.Claimed))
		m.Renewals.Add(int64(r.Renewed))
		m.Releases.Add(int64(r.Released))
		m.Lost.Add(int64(r.Lost))
	}
	n.lastMu.Lock()
	n.last = r
	n.lastMu.Unlock()
	ev := NodeEvent{Time: n.e.now(), Cycle: r}
	n.subsMu.Lock()
	for ch := range n.subs {
		select {
		case ch <- ev:
		default: // a slow subscriber misses an update, never blocks the node
		}
	}
	n.subsMu.Unlock()
	if n.e.observe != nil {
		n.e.observe(Signal{Kind: SignalCycle, Node: n.e.cfg.NodeID, Err: r.Err, Claimed: r.Claimed, Owned: r.Owned, Trigger: r.Trigger})
	}
}

// Subscribe returns a channel of live updates (one per lease cycle) and a cancel func.
func (n *Node) Subscribe() (<-chan NodeEvent, func()) {
	ch := make(chan NodeEvent, 16)
	n.subsMu.Lock()
	n.subs[ch] = struct{}{}
	n.subsMu.Unlock()
	return ch, func() {
		n.subsMu.Lock()
		delete(n.subs, ch)
		n.subsMu.Unlock()
	}
}

// Snapshot is the node's state for a console.
type Snapshot struct {
	NodeID       string
	Platform     string
	GateOpen     bool
	TrustedUntil time.Time // wall-clock time; zero when never confirmed or revoked
	Remaining    time.Duration
	LastCycle    leasekeeper.CycleReport
	Accounts     []AccountStatus
}

// Snapshot reads the node's live state, a copy of every account's status included.
func (n *Node) Snapshot() Snapshot {
	s := Snapshot{NodeID: n.e.cfg.NodeID, Platform: n.e.cfg.Platform, GateOpen: n.nodeGate.HoldsLease(), Remaining: n.nodeGate.Remaining()}
	if _, ok := n.nodeGate.TrustedUntil(); ok {
		// The gate's clock counts from boot; a console wants wall-clock time.
		s.TrustedUntil = n.e.now().Add(s.Remaining)
	}
	s.LastCycle = n.lastCycle()
	s.Accounts = n.e.board.all()
	return s
}

// Summary is what a node's metrics and progress lines read, as often as every scrape: its
// lease and how many accounts it holds, by phase.
type Summary struct {
	GateOpen  bool
	Remaining time.Duration
	LastCycle leasekeeper.CycleReport
	Accounts  int
	ByPhase   map[AccountPhase]int
}

// Summary reads the node's lease and counts its accounts by phase, reading only each
// account's phase: a Snapshot copies every account's status, journal and copy-quality
// summaries, which a scrape of the metrics every two seconds made a tenth of a node's CPU
// at 5,000 accounts.
func (n *Node) Summary() Summary {
	s := Summary{GateOpen: n.nodeGate.HoldsLease(), Remaining: n.nodeGate.Remaining(), LastCycle: n.lastCycle()}
	s.ByPhase, s.Accounts = n.e.board.phases()
	return s
}

func (n *Node) lastCycle() leasekeeper.CycleReport {
	n.lastMu.Lock()
	defer n.lastMu.Unlock()
	return n.last
}

// Metrics returns the node's counters.
func (n *Node) Metrics() *Metrics { return n.e.metrics }

// Config returns the validated configuration.
func (n *Node) Config() Config { return n.e.cfg }

// Ready reports whether the node's lease is trusted now.
func (n *Node) Ready() bool { return n.nodeGate.HoldsLease() }

// SetDraining stops (true) or resumes (false) claiming new accounts.
func (n *Node) SetDraining(draining bool) {
	n.system.Root.Send(n.keeper, leasekeeper.SetDraining{Draining: draining})
}

// Flush writes what the StatusWriter holds now (statuses, positions snapshots, ticket-map
// rows, protection states) and waits for the write: at most until ctx's deadline, or a
// minute without one. Writes an account sends after the call go with the next flush.
// For operators' tools and benchmarks: the node flushes on its own every FlushEvery and
// before it releases leases.
func (n *Node) Flush(ctx context.Context) error {
	timeout := time.Minute
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	res, err := n.system.Root.RequestFuture(n.e.writer, leasekeeper.Flush{}, max(timeout, time.Millisecond)).Result()
	if err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	if done, ok := res.(leasekeeper.Flushed); ok && done.Err != nil {
		return fmt.Errorf("flush: %w", done.Err)
	}
	return nil
}

// Stop shuts the node down cleanly: every gate closes, every AccountActor stops (finishing
// its in-flight order), the buffered statuses are written, the leases of the accounts
// whose actors ended with nothing in flight are released so other nodes can claim at once
// (the others run out), and the actor system ends. Safe to call more than once.
func (n *Node) Stop(ctx context.Context) error {
	n.stopOnce.Do(func() {
		n.endListen()
		n.pruner.stop()
		// One budget for the whole shutdown: the keeper splits it so the release always runs.
		deadline := time.Now().Add(leasekeeper.DefaultShutdownTimeout)
		if dl, ok := ctx.Deadline(); ok {
			deadline = dl
		}
		res, err := n.system.Root.RequestFuture(n.keeper, leasekeeper.Shutdown{Deadline: deadline}, max(time.Until(deadline), time.Second)).Result()
		if err != nil {
			n.stopErr = fmt.Errorf("node stop: %w", err)
		} else if done, ok := res.(leasekeeper.ShutdownDone); ok {
			n.stopErr = done.Err
			n.e.log.Info().Int64("released", done.Released).Msg("node stopped; leases released")
		}
		root := n.system.Root
		for _, pid := range []*actor.PID{n.keeper, n.e.supervisor, n.e.reconciler, n.e.writer} {
			_ = root.StopFuture(pid).Wait()
		}
		n.system.Shutdown()
	})
	return n.stopErr
}

// Halt stops the node at once as a crash would: no order is sent after it returns (every
// gate is revoked), nothing is flushed and no lease is released, so the accounts move to
// other nodes only when their leases expire. For fault drills and tests.
func (n *Node) Halt() {
	n.stopOnce.Do(func() {
		n.e.halted.Store(true)
		defer n.endListen()
		defer n.pruner.stop()
		root := n.system.Root
		// Every gate closes for good before Halt returns; a cycle in flight cannot reopen
		// one. Then no more cycles: no renewal, no release.
		_, _ = root.RequestFuture(n.keeper, leasekeeper.Halt{}, 30*time.Second).Result()
		n.nodeGate.Fence()
		_ = root.StopFuture(n.keeper).Wait()
		for _, pid := range []*actor.PID{n.e.supervisor, n.e.reconciler, n.e.writer} {
			_ = root.StopFuture(pid).Wait()
		}
		n.system.Shutdown()
		n.stopErr = errors.New("node halted")
	})
}

// FIXSession is an account's stored FIX session settings as broker.Credentials carries them.
func FIXSession(f store.FIXSession) broker.FIXSession {
	out := broker.FIXSession{SenderCompID: f.SenderCompID, SenderSubID: f.SenderSubID, TargetCompID: f.TargetCompID,
		TargetSubID: f.TargetSubID, Username: f.Username, Dialect: f.Dialect, PositionMode: f.PositionMode}
	for _, s := range f.Symbols {
		out.Symbols = append(out.Symbols, s.Symbol())
	}
	return out
}
