package actors_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix"
	"github.com/snapcopier/copier/broker/sim"
	"github.com/snapcopier/copier/broker/sim/fixfront"
	"github.com/snapcopier/copier/internal/cputime"
	"github.com/snapcopier/copier/internal/gctune"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

// BenchmarkFanout: one master event copied to N followers held by one node, in-process
// simulator without injected latency. Nothing is polled while it measures: the takeover
// ends on the engine's own signals (every account's first idle reconcile), and each copy
// is timed by a broker wrapper as its Open returns (lock-free, one slot per order).
//
// Two limits are measured in the same run: N trivial protoactor actors receive one shared
// message and each sends the same simulator order (limit-*; a second, untimed message has
// each close its position again, as the engine's copies are closed), and N actors that
// only count the message (bare-*: the runtime alone). Reported: the engine's p50/p99/max (master
// trade started → follower order returned), the same for both limits, the engine's p99
// ratio to each, process CPU per copied order for the engine and the trivial actors
// (their difference is the engine's own cost per order), takeover time and heap per
// owned account. The engine's CPU spans a round's opens and closes and the write of its
// rows (Node.Flush), per order; the limits run after that write, on a quiet engine.
//
// FLUSH=due ends each round with the node's periodic flush instead (ticket rows and the
// reports that are due: an account's status row and positions snapshot at most every
// StatusEvery while only its figures change) and writes the held reports with a Flush
// after the last round, inside the engine's CPU: the rounds at the node's own pace, every
// row still counted. By default (FLUSH=all) every round writes every account's report.
func BenchmarkFanout(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("followers=%d", n), func(b *testing.B) { benchFanout(b, n, false) })
	}
}

// BenchmarkFanoutFIX is BenchmarkFanout with every session, the node's and the limit's,
// a FIX 4.4 session to the simulator's FIX front on loopback (one quickfixgo initiator per
// account). Run it beside BenchmarkFanout (-bench Fanout) for the in-process figures of the
// same run.
func BenchmarkFanoutFIX(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("followers=%d", n), func(b *testing.B) { benchFanout(b, n, true) })
	}
}

func benchFanout(b *testing.B, followers int, viaFIX bool) {
	// The collector's target of a node process (copierd --gc-percent's default), unless
	// GOGC sets one: GOGC=100 measures at Go's default.
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(gctune.DefaultPercent))
	}
	ctx := context.Background()
	db := storetest.NewDB(b)
	s := sim.New(sim.Config{Seed: 1, AutoProvision: true, OrderLogLimit: 1024, Symbols: benchSymbols(b),
		DefaultAccount: broker.AccountSpec{Currency: "USD", Balance: 1e6, Leverage: 100, Mode: broker.Hedging}})
	if err := s.Provision(ctx, broker.AccountSpec{Login: "m1", Currency: "USD", Balance: 1e6, Leverage: 100, Mode: broker.Hedging}); err != nil {
		b.Fatal(err)
	}
	if err := store.CreateAccount(ctx, db.Pool, store.Account{ID: 1, Platform: "sim", Role: store.RoleMaster, Enabled: true, Login: "m1"}); err != nil {
		b.Fatal(err)
	}
	settings, _ := json.Marshal(reconcile.DefaultSettings())
	if _, err := db.Pool.Exec(ctx, `INSERT INTO trading_accounts (id, platform, role, login) SELECT g, 'sim', 'follower', 'f' || g FROM generate_series(1001, 1000 + $1::bigint) g`, followers); err != nil {
		b.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO copy_links (master_id, follower_id, magic, settings) SELECT 1, g, 77, $2 FROM generate_series(1001, 1000 + $1::bigint) g`, followers, settings); err != nil {
		b.Fatal(err)
	}
	var transport broker.Broker = s
	if viaFIX {
		front, err := fixfront.Start("127.0.0.1:0", s, s, fixfront.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = front.Close() }()
		if transport, err = fix.New(fix.Config{Addr: front.Addr()}); err != nil {
			b.Fatal(err)
		}
	}
	rec := &orderRecorder{Broker: transport}
	takenOver := newFirstIdle(followers, 1001)
	var before, after runtimeMem
	before.read()
	started := time.Now()
	takenOver.start = started
	node, err := actors.Start(ctx, actors.Config{NodeID: "bench", Platform: "sim", Capacity: followers, ReconcileEvery: -1,
		ReconcileConcurrency: 64, ReconcileRate: 100000}, actors.Deps{Pool: db.NewPool(b, store.Options{MaxConns: 16}), Broker: rec, Logger: benchLogger(b), Observe: takenOver.observe})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = node.Stop(context.Background()) }()
	awaitDone(b, "takeover", takenOver.done, 5*time.Minute)
	takeover := time.Since(started)
	after.read()

	limit := newTrivialFanout(b, transport, followers)
	defer limit.stop()
	bare := newTrivialFanout(b, nil, followers)
	defer bare.stop()

	dueOnly := false
	switch f := os.Getenv("FLUSH"); f {
	case "", "all":
	case "due":
		dueOnly = true
	default:
		b.Fatalf("FLUSH=%q: want all or due", f)
	}
	var engine, trivial, bareRuntime []time.Duration
	var engineCPU, trivialCPU time.Duration
	rounds := 0
	for b.Loop() {
		rounds++
		// The engine: one master trade, N copies; then the close, N closes.
		r := rec.begin(followers, false)
		cpu0 := cputime.Process()
		p, err := s.MasterOpen(ctx, "m1", broker.MasterOpenRequest{Symbol: "EURUSD", Side: broker.Buy, Volume: 0.01, Magic: 1})
		if err != nil {
			b.Fatal(err)
		}
		awaitRound(b, "copies", r, 2*time.Minute)
		engine = append(engine, r.lat...)
		r = rec.begin(followers, true)
		if err := s.MasterClose(ctx, "m1", p.Ticket, 0); err != nil {
			b.Fatal(err)
		}
		awaitRound(b, "closes", r, 2*time.Minute)
		// The rounds' rows are written before the limit runs: the engine's CPU counts its
		// writes, and the limit's rounds do not pay for them.
		flush := func() error { return node.Flush(ctx) }
		if dueOnly {
			flush = node.FlushDue
		}
		if err := flush(); err != nil {
			b.Fatal(err)
		}
		engineCPU += cputime.Process() - cpu0
		// The limit: the same event to N trivial actors, each sending the same order.
		cpu0 = cputime.Process()
		trivial = append(trivial, limit.round(b)...)
		trivialCPU += cputime.Process() - cpu0
		// The bare runtime: the same event to N actors that only count it.
		bareRuntime = append(bareRuntime, bare.round(b)...)
	}
	if dueOnly { // the reports held back by the rounds' flushes, counted as the engine's
		cpu0 := cputime.Process()
		if err := node.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		engineCPU += cputime.Process() - cpu0
	}
	orders := float64(rounds * followers)
	engineOrders := 2 * orders // an open and a close per follower and round
	ep, tp, bp := percentiles(engine), percentiles(trivial), percentiles(bareRuntime)
	b.ReportMetric(time.Duration(takenOver.owned.Load()).Seconds(), "takeover-owned-s")
	b.ReportMetric(time.Duration(takenOver.loaded.Load()).Seconds(), "takeover-loaded-s")
	b.ReportMetric(ep.ms(50), "p50-ms")
	b.ReportMetric(ep.ms(99), "p99-ms")
	b.ReportMetric(ep.ms(100), "max-ms")
	b.ReportMetric(tp.ms(50), "limit-p50-ms")
	b.ReportMetric(tp.ms(99), "limit-p99-ms")
	b.ReportMetric(ep.ms(99)/tp.ms(99), "p99-ratio")
	b.ReportMetric(bp.ms(50), "bare-p50-ms")
	b.ReportMetric(bp.ms(99), "bare-p99-ms")
	b.ReportMetric(ep.ms(99)/bp.ms(99), "bare-p99-ratio")
	b.ReportMetric(float64(engineCPU.Microseconds())/engineOrders, "cpu-us/order")
	b.ReportMetric(float64(trivialCPU.Microseconds())/(orders*float64(limit.orders())), "limit-cpu-us/order") // its opens and closes
	b.ReportMetric(takeover.Seconds(), "takeover-s")
	b.ReportMetric(float64(after.heap-before.heap)/float64(followers)/1024, "heap-KiB/account")
	b.ReportMetric(float64(heapHeld())/(1<<20), "heap-held-MiB")
}

// benchSymbols is the simulator's symbol list: its default eight, or with SYMBOLS=N (N > 8)
// those and N − 8 more currency pairs, as a real trade server lists hundreds. Every
// account's symbol specifications are read by its takeover's reconcile and kept.
func benchSymbols(b *testing.B) []sim.SymbolConfig {
	list := sim.DefaultSymbols()
	n, err := strconv.Atoi(cmp.Or(os.Getenv("SYMBOLS"), "8"))
	if err != nil || n < len(list) {
		b.Fatalf("SYMBOLS=%q: want a count of at least %d", os.Getenv("SYMBOLS"), len(list))
	}
	for i := len(list); i < n; i++ {
		list = append(list, sim.SymbolConfig{Name: fmt.Sprintf("FX%03dUSD", i), BaseCurrency: "EUR", QuoteCurrency: "USD", ContractSize: 100000,
			MinLot: 0.01, MaxLot: 100, LotStep: 0.01, Digits: 5, SpreadPoints: 10 + i%7, Underlying: "EURUSD"})
	}
	return list
}

// heapHeld is the heap memory the process holds from the system now (mapped and not
// returned): what the collector's target costs in memory.
func heapHeld() uint64 {
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	return s.HeapSys - s.HeapReleased
}

// percentiles are sorted latencies.
type percentiles []time.Duration

func (p percentiles) ms(q int) float64 {
	sorted := slices.Clone(p)
	slices.Sort(sorted)
	i := min(len(sorted)*q/100, len(sorted)-1)
	return float64(sorted[i].Microseconds()) / 1000
}

// awaitDone waits for a channel the measured system closes itself: no polling.
func awaitDone(b *testing.B, what string, done <-chan struct{}, within time.Duration) {
	b.Helper()
	select {
	case <-done:
	case <-time.After(within):
		b.Fatalf("%s: not done within %v", what, within)
	}
}

// benchLogger is the node's logger: none, or warnings to the file COPIER_BENCH_LOG names.
func benchLogger(b *testing.B) zerolog.Logger {
	path := os.Getenv("COPIER_BENCH_LOG")
	if path == "" {
		return zerolog.Nop()
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = f.Close() })
	return zerolog.New(f).Level(zerolog.WarnLevel).With().Timestamp().Logger()
}

// awaitRound waits for a round's last order; on a timeout it says how many came.
func awaitRound(b *testing.B, what string, r *round, within time.Duration) {
	b.Helper()
	select {
	case <-r.done:
	case <-time.After(within):
		b.Fatalf("%s: %d of %d orders within %v", what, min(r.next.Load(), int64(len(r.lat))), len(r.lat), within)
	}
}

// firstIdle closes done when each of n accounts (ids first…first+n−1) has reported its
// first idle reconcile.
// It also notes, as offsets from start, when the node's lease cycles first owned all n
// (owned) and when the last account loaded its configuration (loaded): the takeover's
// stages.
type firstIdle struct {
	first  int64
	n      int
	start  time.Time
	seen   []atomic.Bool
	left   atomic.Int64
	owned  atomic.Int64 // nanoseconds after start
	loaded atomic.Int64 // nanoseconds after start, of the latest SignalLoaded
	done   chan struct{}
}

func newFirstIdle(n int, first int64) *firstIdle {
	f := &firstIdle{first: first, n: n, seen: make([]atomic.Bool, n), done: make(chan struct{})}
	f.left.Store(int64(n))
	return f
}

func (f *firstIdle) observe(s actors.Signal) {
	switch {
	case s.Kind == actors.SignalCycle && s.Owned >= f.n:
		f.owned.CompareAndSwap(0, int64(time.Since(f.start)))
	case s.Kind == actors.SignalLoaded:
		f.loaded.Store(int64(time.Since(f.start)))
	}
	i := s.Account - f.first
	if s.Kind != actors.SignalReconcileDone || !s.Idle || i < 0 || i >= int64(len(f.seen)) {
		return
	}
	if !f.seen[i].Swap(true) && f.left.Add(-1) == 0 {
		close(f.done)
	}
}

// round is one measured fan-out: n orders, each timed from start into its own slot.
type round struct {
	start time.Time
	close bool // counts ClosePosition calls instead of Open
	lat   []time.Duration
	next  atomic.Int64 // slots handed out
	wrote atomic.Int64 // slots written: the last writer closes done, after every write
	done  chan struct{}
}

func newRound(n int, close bool) *round {
	return &round{start: time.Now(), close: close, lat: make([]time.Duration, n), done: make(chan struct{})}
}

// record times one order of the round; the last one closes done.
func (r *round) record() {
	d := time.Since(r.start)
	i := r.next.Add(1) - 1
	if i < int64(len(r.lat)) {
		r.lat[i] = d
		// Counted after the write, so done closes only once every slot holds its value
		// (the slot handed out last may be written before an earlier one).
		if r.wrote.Add(1) == int64(len(r.lat)) {
			close(r.done)
		}
	}
}

// orderRecorder wraps the broker the node uses and times each follower order that
// succeeds against the current round.
type orderRecorder struct {
	broker.Broker
	cur atomic.Pointer[round]
}

func (o *orderRecorder) begin(n int, close bool) *round {
	r := newRound(n, close)
	o.cur.Store(r)
	return r
}

func (o *orderRecorder) Connect(ctx context.Context, c broker.Credentials) (broker.Session, error) {
	s, err := o.Broker.Connect(ctx, c)
	if err != nil {
		return nil, err
	}
	return &recordingSession{Session: s, o: o}, nil
}

type recordingSession struct {
	broker.Session
	o *orderRecorder
}

func (s *recordingSession) Open(ctx context.Context, r broker.OpenRequest) (broker.OrderResult, error) {
	res, err := s.Session.Open(ctx, r)
	if cur := s.o.cur.Load(); err == nil && cur != nil && !cur.close {
		cur.record()
	}
	return res, err
}

func (s *recordingSession) ClosePosition(ctx context.Context, r broker.CloseRequest) (broker.OrderResult, error) {
	res, err := s.Session.ClosePosition(ctx, r)
	if cur := s.o.cur.Load(); err == nil && cur != nil && cur.close {
		cur.record()
	}
	return res, err
}

// trivialFanout is a limit: N protoactor actors, each with its own simulator session,
// that send one market order when the shared message arrives; without a broker (the bare
// runtime's limit) they only count the message. They run on the AccountActors' dispatcher
// and take the engine's request ids: on protoactor's default dispatcher each order's
// simulator call grew the actor's stack, a cost the engine does not pay (a third of the
// limit's CPU at 1,000 followers), and uuid.New reads the system's random source.
type trivialFanout struct {
	system *actor.ActorSystem
	pids   []*actor.PID
	sess   []broker.Session
}

// fanoutMsg is the one message every trivial actor receives in a round.
type fanoutMsg struct{ r *round }

func newTrivialFanout(b *testing.B, s broker.Broker, n int) *trivialFanout {
	t := &trivialFanout{system: actor.NewActorSystem(actor.WithLoggerFactory(func(system *actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))}
	if s == nil {
		for range n {
			t.pids = append(t.pids, t.system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
				if m, ok := c.Message().(*fanoutMsg); ok {
					m.r.record()
				}
			}, actor.WithDispatcher(actors.MailboxDispatcher()))))
		}
		return t
	}
	// Connected 64 at a time, as the node's reconciles connect its accounts.
	t.sess = make([]broker.Session, n)
	errs := make(chan error, n)
	slots := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			sess, err := s.Connect(context.Background(), broker.Credentials{Login: fmt.Sprintf("t%d", i)})
			t.sess[i] = sess
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	for _, sess := range t.sess {
		var ticket int64 // the position this actor's last open made, closed by the next close round
		t.pids = append(t.pids, t.system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
			m, ok := c.Message().(*fanoutMsg)
			if !ok {
				return
			}
			order := broker.Order{RequestID: actors.NewRequestID(), Token: 1, Node: "trivial"}
			if m.r.close {
				if _, err := sess.ClosePosition(context.Background(), broker.CloseRequest{Order: order, Ticket: ticket}); err == nil {
					m.r.record()
				}
				return
			}
			res, err := sess.Open(context.Background(), broker.OpenRequest{Order: order, Symbol: "EURUSD", Side: broker.Buy, Volume: 0.01, Magic: 77})
			if err == nil {
				ticket = res.Ticket
				m.r.record()
			}
		}, actor.WithDispatcher(actors.MailboxDispatcher()))))
	}
	return t
}

// round sends one shared message to every actor and waits for all their orders. With a
// broker, the actors' positions are closed again after the measured opens, as the engine's
// copies are: the simulator's accounts stay as small as the engine's, and the limit's CPU
// spans the same opens and closes (see orders).
func (t *trivialFanout) round(b *testing.B) []time.Duration {
	opens := t.fanout(b, false)
	if t.sess != nil {
		t.fanout(b, true)
	}
	return opens
}

// orders is how many orders a round sends per actor: an open and a close with a broker.
func (t *trivialFanout) orders() int {
	if t.sess != nil {
		return 2
	}
	return 1
}

func (t *trivialFanout) fanout(b *testing.B, close bool) []time.Duration {
	r := newRound(len(t.pids), close)
	msg := &fanoutMsg{r: r}
	for _, pid := range t.pids {
		t.system.Root.Send(pid, msg)
	}
	awaitDone(b, "trivial fan-out", r.done, 2*time.Minute)
	return r.lat
}

func (t *trivialFanout) stop() {
	for _, pid := range t.pids {
		_ = t.system.Root.StopFuture(pid).Wait()
	}
	var wg sync.WaitGroup
	for _, s := range t.sess {
		wg.Add(1)
		go func() { defer wg.Done(); _ = s.Close() }()
	}
	wg.Wait()
	t.system.Shutdown()
}
