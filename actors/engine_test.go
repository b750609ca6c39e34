package actors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/sim"
	"github.com/snapcopier/copier/internal/fixleaks"
	"github.com/snapcopier/copier/internal/testwait"
	"github.com/snapcopier/copier/leasekeeper"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

// TestMain checks for leaked goroutines once all tests have ended: the tests run in
// parallel, so a per-test check would see its neighbours' goroutines.
func TestMain(m *testing.M) {
	storetest.Main(m, func() error {
		return goleak.Find(append(fixleaks.Ignore(), // quickfixgo's known leaks of stopped sessions (BenchmarkFanoutFIX)
			// protoactor's dead-letter throttle sleeps out its period in a goroutine of
			// its own after a node stops; it ends by itself.
			goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"),
			// toxiproxy's toxic pipelines (cut tests) wind down on their own after the
			// proxy stops.
			goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2/toxics.(*ToxicStub).Run"),
		)...)
	})
}

// shortLease is the test timing: lease 6 s, fence 2 s, a cycle every 300 ms. The 4 s of
// trust leave a cycle room on a loaded machine (3 s / 1 s failed cycles under load).
var shortLease = leasekeeper.Config{Lease: 6 * time.Second, Fence: 2 * time.Second, Interval: 300 * time.Millisecond}

// cluster is a test deployment: one database, one simulator, masters, followers and nodes.
type cluster struct {
	t         *testing.T
	db        *storetest.DB
	sim       *sim.Server
	masters   []int64
	followers []int64
	nodes     map[string]*actors.Node
	signals   *testwait.Log[actors.Signal] // what every node's accounts did, in order
}

func newCluster(t *testing.T, masters, followers int) *cluster {
	t.Helper()
	t.Parallel() // each test has its own database, simulator and nodes
	c := &cluster{t: t, db: storetest.NewDB(t), nodes: map[string]*actors.Node{}, signals: &testwait.Log[actors.Signal]{}}
	c.sim = sim.New(sim.Config{Seed: 7, AutoProvision: true, DefaultAccount: broker.AccountSpec{
		Currency: "USD", Balance: 100_000, Leverage: 100, Mode: broker.Hedging,
	}})
	ctx := context.Background()
	settings, _ := json.Marshal(reconcile.DefaultSettings())
	for i := 1; i <= masters; i++ {
		id := int64(i)
		c.masters = append(c.masters, id)
		must(t, store.CreateAccount(ctx, c.db.Pool, store.Account{ID: id, Platform: "sim", Role: store.RoleMaster, Enabled: true, Login: fmt.Sprintf("m%d", id)}))
		must(t, c.sim.Provision(ctx, broker.AccountSpec{Login: fmt.Sprintf("m%d", id), Currency: "USD", Balance: 100_000, Leverage: 100, Mode: broker.Hedging}))
	}
	for i := 1; i <= followers; i++ {
		id := int64(1000 + i)
		c.followers = append(c.followers, id)
		must(t, store.CreateAccount(ctx, c.db.Pool, store.Account{ID: id, Platform: "sim", Role: store.RoleFollower, Enabled: true, Login: fmt.Sprintf("f%d", id)}))
		must(t, c.sim.Provision(ctx, broker.AccountSpec{Login: fmt.Sprintf("f%d", id), Currency: "USD", Balance: 100_000, Leverage: 100, Mode: broker.Hedging}))
		master := c.masters[i%masters]
		_, err := store.CreateLink(ctx, c.db.Pool, store.Link{MasterID: master, FollowerID: id, Enabled: true, Magic: 7000 + master, Settings: settings})
		must(t, err)
	}
	return c
}

// provision makes an account of the simulator (hedging, 100,000 USD) and of the
// database, for tests that set up their own simulator.
func provision(t *testing.T, s *sim.Server, db *storetest.DB, id int64, login string, role store.Role) {
	t.Helper()
	ctx := context.Background()
	must(t, s.Provision(ctx, broker.AccountSpec{Login: login, Currency: "USD", Balance: 100_000, Leverage: 100, Mode: broker.Hedging}))
	must(t, store.CreateAccount(ctx, db.Pool, store.Account{ID: id, Platform: "sim", Role: role, Enabled: true, Login: login}))
}

// startOwn starts node n1 (capacity 10, test lease, no periodic repair) on a test's own
// simulator s and database, its signals into signals and its clock now (nil: time.Now);
// it stops with the test.
func startOwn(t *testing.T, db *storetest.DB, s broker.Broker, signals *testwait.Log[actors.Signal], now func() time.Time) *actors.Node {
	t.Helper()
	node, err := actors.Start(context.Background(), actors.Config{NodeID: "n1", Platform: "sim", Capacity: 10, Lease: shortLease, ReconcileEvery: -1},
		actors.Deps{Pool: db.NewPool(t, store.Options{}), Broker: s, Logger: zerolog.New(zerolog.NewTestWriter(t)).Level(testLogLevel()),
			Observe: signals.Add, Now: now})
	must(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = node.Stop(ctx)
	})
	return node
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (c *cluster) start(name string, capacity int, pool *pgxpool.Pool) *actors.Node {
	c.t.Helper()
	return c.startWith(name, capacity, pool, nil)
}

// startWith is start with the node's configuration adjusted by tweak (when not nil).
func (c *cluster) startWith(name string, capacity int, pool *pgxpool.Pool, tweak func(*actors.Config)) *actors.Node {
	c.t.Helper()
	return c.launch(name, capacity, pool, tweak, c.sim)
}

// startOn is start with the node trading through b (a wrapper of the simulator).
func (c *cluster) startOn(name string, capacity int, b broker.Broker) *actors.Node {
	c.t.Helper()
	return c.launch(name, capacity, nil, nil, b)
}

func (c *cluster) launch(name string, capacity int, pool *pgxpool.Pool, tweak func(*actors.Config), b broker.Broker) *actors.Node {
	c.t.Helper()
	if pool == nil {
		pool = c.db.NewPool(c.t, store.Options{})
	}
	log := zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr}).Level(testLogLevel())
	cfg := actors.Config{NodeID: name, Platform: "sim", Capacity: capacity, Lease: shortLease, ReconcileEvery: -1}
	if tweak != nil {
		tweak(&cfg)
	}
	n, err := actors.Start(context.Background(), cfg, actors.Deps{Pool: pool, Broker: b, Logger: log, Observe: c.signals.Add})
	must(c.t, err)
	c.nodes[name] = n
	c.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = n.Stop(ctx)
	})
	return n
}

// testLogLevel is the nodes' log level: errors, or COPIER_TEST_LOG (debug, info, warn).
func testLogLevel() zerolog.Level {
	if l, err := zerolog.ParseLevel(os.Getenv("COPIER_TEST_LOG")); err == nil && l != zerolog.NoLevel {
		return l
	}
	return zerolog.ErrorLevel
}

// eventually polls cond (on state outside the node: the database, the simulator) until
// it holds or the deadline passes.
func (c *cluster) eventually(what string, within time.Duration, cond func() (bool, string)) {
	c.t.Helper()
	testwait.For(c.t, what, within, cond)
}

// awaitSignals waits until cond holds for the signals recorded after mark.
func (c *cluster) awaitSignals(what string, mark int, cond func([]actors.Signal) (bool, string)) {
	c.t.Helper()
	c.signals.Await(c.t, what, mark, 30*time.Second, cond)
}

// awaitIdle waits until each of the accounts has finished a reconcile after mark with
// nothing further running or due: its feeds are attached and its copies are in step, so
// each master event from now on reaches it as an event.
func (c *cluster) awaitIdle(what string, mark int, accounts []int64) {
	c.t.Helper()
	c.awaitSignals(what, mark, func(sigs []actors.Signal) (bool, string) {
		idle := map[int64]bool{}
		for _, s := range sigs {
			switch s.Kind {
			case actors.SignalReconcileStarted:
				idle[s.Account] = false
			case actors.SignalReconcileDone:
				idle[s.Account] = s.Idle
			}
		}
		for _, a := range accounts {
			if !idle[a] {
				return false, fmt.Sprintf("account %d not idle", a)
			}
		}
		return true, ""
	})
}

// reconcilesSince counts, per account, the reconciles started after mark by cause.
func (c *cluster) reconcilesSince(mark int) map[int64]map[string]int {
	out := map[int64]map[string]int{}
	for _, s := range c.signals.Since(mark) {
		if s.Kind != actors.SignalReconcileStarted {
			continue
		}
		if out[s.Account] == nil {
			out[s.Account] = map[string]int{}
		}
		out[s.Account][s.Cause]++
	}
	return out
}

// followersOf lists the followers linked to master (newCluster links follower i to
// master i mod len(masters)).
func (c *cluster) followersOf(master int64) []int64 {
	var out []int64
	for i, f := range c.followers {
		if c.masters[(i+1)%len(c.masters)] == master {
			out = append(out, f)
		}
	}
	return out
}

// owners maps follower → node id from the database.
func (c *cluster) owners() map[int64]store.LeaseRow {
	rows, err := store.Leases(context.Background(), c.db.Pool, nil)
	must(c.t, err)
	out := map[int64]store.LeaseRow{}
	for _, r := range rows {
		out[r.ID] = r
	}
	return out
}

func (c *cluster) allOwned(by ...string) func() (bool, string) {
	allowed := map[string]bool{}
	for _, b := range by {
		allowed[b] = true
	}
	return func() (bool, string) {
		free := 0
		for _, r := range c.owners() {
			if r.NodeID == "" || r.LeaseUntil.IsZero() || (len(allowed) > 0 && !allowed[r.NodeID]) {
				free++
			}
		}
		return free == 0, fmt.Sprintf("%d followers not owned by %v", free, by)
	}
}

// converged checks every follower against its master: exactly one copy (by magic and
// marker) of each open master position, with the master's volume, SL and TP, and no copy
// of a closed one.
func (c *cluster) converged() (bool, string) {
	ctx := context.Background()
	masterPos := map[int64]map[int64]broker.Position{}
	for _, m := range c.masters {
		ps, err := c.sim.AccountPositions(ctx, fmt.Sprintf("m%d", m))
		must(c.t, err)
		masterPos[m] = map[int64]broker.Position{}
		for _, p := range ps {
			masterPos[m][p.Ticket] = p
		}
	}
	for i, f := range c.followers {
		master := c.masters[(i+1)%len(c.masters)]
		ps, err := c.sim.AccountPositions(ctx, fmt.Sprintf("f%d", f))
		must(c.t, err)
		copies := map[int64]int{}
		for _, p := range ps {
			mt, ok := reconcile.ParseMarker(p.Comment)
			if !ok || p.Magic != 7000+master {
				return false, fmt.Sprintf("follower %d: unexpected position %+v", f, p)
			}
			copies[mt]++
			mp, open := masterPos[master][mt]
			if !open {
				return false, fmt.Sprintf("follower %d: copy of closed master ticket %d", f, mt)
			}
			if p.Volume != mp.Volume || p.SL != mp.SL || p.TP != mp.TP || p.Side != mp.Side {
				return false, fmt.Sprintf("follower %d: copy %+v of %+v", f, p, mp)
			}
		}
		for t := range masterPos[master] {
			if copies[t] != 1 {
				return false, fmt.Sprintf("follower %d: %d copies of master ticket %d", f, copies[t], t)
			}
		}
	}
	return true, ""
}

// duplicateOpens counts executed follower opens of one master ticket beyond the first.
func (c *cluster) duplicateOpens() []string {
	log, err := c.sim.OrderLog(context.Background(), 0, 0)
	must(c.t, err)
	seen := map[string]int{}
	var dups []string
	for _, e := range log {
		if e.Master || e.Op != broker.OpOpen || !e.Executed || !strings.HasPrefix(e.Login, "f") {
			continue
		}
		k := e.Login + "/" + e.Comment
		seen[k]++
		if seen[k] == 2 {
			dups = append(dups, k)
		}
	}
	return dups
}

func (c *cluster) masterOpen(master int64, symbol string, side broker.Side, vol, sl, tp float64) broker.Position {
	c.t.Helper()
	p, err := c.sim.MasterOpen(context.Background(), fmt.Sprintf("m%d", master), broker.MasterOpenRequest{Symbol: symbol, Side: side, Volume: vol, SL: sl, TP: tp, Magic: 1})
	must(c.t, err)
	return p
}

func TestCopyingEndToEnd(t *testing.T) {
	c := newCluster(t, 2, 200)
	for i := 1; i <= 3; i++ {
		c.start(fmt.Sprintf("n%d", i), 100, nil)
	}
	c.eventually("all followers owned", 30*time.Second, c.allOwned())
	ctx := context.Background()
	a := c.masterOpen(1, "EURUSD", broker.Buy, 1.0, 0, 0)
	b := c.masterOpen(2, "GBPUSD", broker.Sell, 0.5, 0, 0)
	d := c.masterOpen(2, "USDJPY", broker.Buy, 0.3, 0, 0)
	c.eventually("opens copied", 30*time.Second, c.converged)

	_, err := c.sim.MasterModify(ctx, "m1", a.Ticket, roundPrice(a.OpenPrice*0.99), roundPrice(a.OpenPrice*1.01))
	must(t, err)
	must(t, c.sim.MasterClose(ctx, "m2", b.Ticket, 0.2))
	must(t, c.sim.MasterClose(ctx, "m2", d.Ticket, 0))
	c.eventually("modify, partial close and close copied", 30*time.Second, c.converged)
	if dups := c.duplicateOpens(); len(dups) > 0 {
		t.Fatalf("duplicate copies opened: %v", dups)
	}
}

func roundPrice(p float64) float64 { return float64(int64(p*1e5+0.5)) / 1e5 }

// loginBroker hands the sessions of one login to wrap; the others pass through.
type loginBroker struct {
	broker.Broker
	login string
	wrap  func(broker.Session) broker.Session
}

func (b *loginBroker) Connect(ctx context.Context, c broker.Credentials) (broker.Session, error) {
	s, err := b.Broker.Connect(ctx, c)
	if err != nil || c.Login != b.login {
		return s, err
	}
	return b.wrap(s), nil
}
