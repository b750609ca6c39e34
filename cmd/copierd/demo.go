package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix"
	"github.com/snapcopier/copier/broker/fix/fixwire"
	"github.com/snapcopier/copier/broker/sim"
	"github.com/snapcopier/copier/broker/sim/activity"
	"github.com/snapcopier/copier/broker/sim/fixfront"
	"github.com/snapcopier/copier/cmd/copierd/setup"
	"github.com/snapcopier/copier/cmd/copierd/stress"
	"github.com/snapcopier/copier/leasekeeper"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/store"
)

// demoSynopsis is the help text of the command.
const demoSynopsis = `Runs a whole copier on this machine and shows it working: a throwaway PostgreSQL (unless
--database-url is given), an in-process simulated trade server, --masters master accounts,
--followers follower accounts linked to them with several sizing modes (lot multiplier,
fixed lot, balance ratio, equity ratio), --nodes nodes that share the followers through
their leases, and a seeded generator that trades on the masters (opens, SL/TP changes,
partial closes, closes). It prints the status page's URL, a progress line every
--progress, and at the end (Ctrl-C or --duration) a verdict: are every follower's copies
in line with its master? Everything it started is stopped and removed on exit.

With --broker fix the nodes trade over FIX 4.4 through the simulator's FIX front, in the
cTrader dialect by default. --fix-dialect fix44 makes the front strict (standard FIX 4.4
only: no SecurityList, positions, account data, feeds or custom tags): the followers
trade through it in the fix44 dialect (netting accounts, the simulator's symbols as the
nodes' list, positions from the position book in PostgreSQL, copies without SL/TP, sizings
that need no equity: lot multiplier and fixed lot; no drawdown guard, --losing-after is
off), while the masters are read in-process
from the simulator, as a firm with a standard FIX venue for its followers reads its masters
from their own platform. The demo prints the first copies that fill at the strict front,
and its verdict compares each follower's net volume per symbol at the venue with its
position book and its master's.

Exit status: 0 when every follower is in line, 1 when not (or on a failure), 2 on bad
flags. With --database-url the database must hold no follower accounts yet; it is
migrated, and the demo's accounts are left in it.`

// demoFlags are the flags of copierd demo.
type demoFlags struct {
	dbURL                      string
	nodes, masters, followers  int
	capacity                   int
	httpAddr                   string
	duration, progress, settle time.Duration
	lease, fence, interval     time.Duration
	rate                       float64
	seed                       uint64
	logFormat, logLevel        string
	broker                     string // "sim" or "fix"
	fixDialect                 string // with --broker fix: "ctrader" or "fix44"
	losingAfter                time.Duration
	gcPercent                  int
}

// runDemo is the demo subcommand.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("demo", demoSynopsis, stderr)
	var f demoFlags
	fs.StringVar(&f.dbURL, "database-url", "", "PostgreSQL URL of an empty database (empty: start a throwaway PostgreSQL)")
	fs.IntVar(&f.nodes, "nodes", 3, "number of in-process nodes")
	fs.IntVar(&f.masters, "masters", 5, "number of master accounts")
	fs.IntVar(&f.followers, "followers", 300, "number of follower accounts (platform sim)")
	fs.IntVar(&f.capacity, "capacity", 0, "capacity of each node (0: an even share, followers ÷ nodes rounded up)")
	fs.StringVar(&f.httpAddr, "http", "127.0.0.1:8080", "serve the status page, /healthz, /readyz and /metrics on HOST:PORT (empty: off; port 0 picks one)")
	fs.DurationVar(&f.duration, "duration", 0, "stop after trading this long (0: run until Ctrl-C)")
	fs.DurationVar(&f.progress, "progress", 2*time.Second, "time between progress lines")
	fs.DurationVar(&f.settle, "settle", 15*time.Second, "at the end, how long to wait for the copies to catch up before the verdict")
	fs.DurationVar(&f.losingAfter, "losing-after", 20*time.Second, "after trading this long, master 1 loses on gold until follower 1 is stopped out by its 3 % drawdown limit (0: never)")
	fs.DurationVar(&f.lease, "lease", 6*time.Second, "lease length of the nodes")
	fs.DurationVar(&f.fence, "fence", 2*time.Second, "fence of the nodes")
	fs.DurationVar(&f.interval, "interval", time.Second, "lease cycle interval of the nodes")
	fs.Float64Var(&f.rate, "rate", 4, "master trading events per second, over all masters")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the trading generator and the simulator")
	addGCPercentFlag(fs, &f.gcPercent)
	fs.StringVar(&f.logFormat, "log-format", "console", "log format: json or console")
	fs.StringVar(&f.logLevel, "log-level", "warn", "log level: trace, debug, info, warn or error")
	fs.StringVar(&f.broker, "broker", "sim", `how the nodes reach the simulator: "sim" (in-process) or "fix" (FIX 4.4 over loopback, through the simulator's FIX front)`)
	fs.StringVar(&f.fixDialect, "fix-dialect", string(fixwire.DialectCTrader), `with --broker fix, the FIX front's dialect: "ctrader" (every account over FIX) or "fix44" (a strict, standard FIX 4.4 front for the followers; the masters in-process)`)
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	losingSet := false
	fs.Visit(func(fl *flag.Flag) { losingSet = losingSet || fl.Name == "losing-after" })
	usageErr := func(err error) int {
		fmt.Fprintf(stderr, "copierd demo: %s\n", oneLine(err))
		return exitUsage
	}
	switch {
	case f.nodes < 1 || f.nodes > 100:
		return usageErr(fmt.Errorf("--nodes %d: want 1 to 100", f.nodes))
	case f.masters < 1 || f.masters > 10_000:
		return usageErr(fmt.Errorf("--masters %d: want 1 to 10000", f.masters))
	case f.followers < 0 || f.followers > 100_000:
		return usageErr(fmt.Errorf("--followers %d: want 0 to 100000", f.followers))
	case f.capacity < 0:
		return usageErr(fmt.Errorf("--capacity %d: must not be negative", f.capacity))
	case f.duration < 0 || f.settle < 0:
		return usageErr(errors.New("--duration and --settle must not be negative"))
	case f.progress <= 0:
		return usageErr(errors.New("--progress must be positive"))
	case !(f.rate > 0 && f.rate <= 1000):
		return usageErr(fmt.Errorf("--rate %v: want more than 0 and at most 1000 events per second", f.rate))
	case f.broker != "sim" && f.broker != "fix":
		return usageErr(fmt.Errorf(`--broker %q: want "sim" or "fix"`, f.broker))
	}
	if d, err := fixwire.ParseDialect(f.fixDialect); err != nil || d == "" {
		return usageErr(fmt.Errorf("--fix-dialect %q: want ctrader or fix44", f.fixDialect))
	}
	if _, _, err := applyGCPercent(fs, f.gcPercent); err != nil {
		return usageErr(err)
	}
	if f.fixDialect == string(fixwire.DialectFIX44) {
		switch {
		case f.broker != "fix":
			return usageErr(fmt.Errorf("--fix-dialect fix44 needs --broker fix (got --broker %s)", f.broker))
		case losingSet && f.losingAfter > 0:
			return usageErr(errors.New("--losing-after needs the follower's equity, which the fix44 front does not report (use --losing-after 0)"))
		}
		f.losingAfter = 0 // the drawdown guard reads the equity
	}
	// The demo's nodes and simulator share one process and one clock: no skew.
	timing := leasekeeper.Config{Lease: f.lease, Fence: f.fence, Interval: f.interval}
	if err := timing.Validate(); err != nil {
		return usageErr(err)
	}
	if f.dbURL != "" {
		if _, err := store.ParseConfig(f.dbURL, store.Options{}); err != nil {
			return usageErr(err)
		}
	}
	if f.httpAddr != "" {
		if err := checkListenAddr("http", f.httpAddr); err != nil {
			return usageErr(err)
		}
	}
	log, err := newLogger(stderr, f.logFormat, f.logLevel)
	if err != nil {
		return usageErr(err)
	}
	if f.capacity == 0 {
		f.capacity = max(1, (f.followers+f.nodes-1)/f.nodes)
	}
	d := &demo{f: f, timing: timing, out: stdout, errOut: stderr, log: log}
	return d.run(ctx)
}

// demoMaster is one master account of the demo.
type demoMaster struct {
	id    int64
	login string
}

// demoFollower is one follower account of the demo and its link.
type demoFollower struct {
	id       int64
	login    string
	master   int // index into demo.masters
	magic    int64
	settings reconcile.Settings
}

// demo is one run of copierd demo.
type demo struct {
	f      demoFlags
	timing leasekeeper.Config
	out    io.Writer // progress and results, under outMu
	errOut io.Writer
	log    zerolog.Logger

	outMu sync.Mutex // printf's: the strict demo's nodes print copies landing

	sim      *sim.Server
	fixAddr  string // the simulator's FIX front, with --broker fix
	fixToken string // the front's token, which the nodes' logons carry
	front    *fixfront.Front
	// With --fix-dialect fix44: the strict front, the nodes' symbol list, the copies that
	// landed there and the followers' failed reconciles.
	strict    bool
	symbols   []fix.Symbol
	landings  *landings
	failures  *reconcileFailures
	pool      *pgxpool.Pool
	masters   []demoMaster
	followers []demoFollower
	nodes     []*actors.Node
	gen       *activity.Generator
	dbURL     string
	started   atomic.Pointer[time.Time] // when trading started; read by the HTTP handler
	console   consoleEnv                // a generated key and token for this run
}

// printf writes one line of output.
func (d *demo) printf(format string, args ...any) {
	d.outMu.Lock()
	defer d.outMu.Unlock()
	fmt.Fprintf(d.out, format+"\n", args...)
}

// run sets the demo up, runs it until ctx ends or the duration passes, tears it down and
// returns the exit code.
func (d *demo) run(ctx context.Context) (code int) {
	// Bind the HTTP port first: a port in use is reported before anything starts.
	var listener net.Listener
	if d.f.httpAddr != "" {
		l, err := net.Listen("tcp", d.f.httpAddr)
		if err != nil {
			fmt.Fprintf(d.errOut, "copierd demo: %s (--http 127.0.0.1:0 picks a free port; --http '' turns it off)\n", oneLine(err))
			return exitFailure
		}
		listener = l
		defer listener.Close()
	}
	interrupted := func(stage string) int {
		d.printf("interrupted while %s; cleaning up", stage)
		return exitOK
	}
	fail := func(err error) int {
		fmt.Fprintf(d.errOut, "copierd demo: %s\n", oneLine(err))
		return exitFailure
	}

	if d.f.dbURL == "" {
		d.printf("starting a throwaway PostgreSQL ...")
	}
	db, err := setup.OpenDatabase(ctx, setup.DatabaseOptions{URL: d.f.dbURL, App: "copierd-demo", MaxConns: 4})
	if err != nil {
		if ctx.Err() != nil && d.f.dbURL == "" {
			return interrupted("starting PostgreSQL")
		}
		return fail(err)
	}
	defer func() {
		err := db.Close()
		switch {
		case db.Cluster == nil:
		case err != nil:
			fmt.Fprintf(d.errOut, "copierd demo: stopping PostgreSQL: %s\n", oneLine(err))
		default:
			d.printf("PostgreSQL stopped; its temporary data was removed")
		}
	}()
	if db.Cluster != nil {
		d.printf("PostgreSQL is up on %s (data in %s)", db.Addr, db.Cluster.Dir())
	}
	d.dbURL, d.pool = db.URL, db.Pool
	if err := waitForDatabase(ctx, d.log, d.pool, true); err != nil {
		if ctx.Err() != nil {
			return interrupted("waiting for the database")
		}
		return fail(err)
	}
	if err := setup.RequireNoFollowers(ctx, d.pool, "the demo"); err != nil {
		return fail(err)
	}

	if d.console, err = newDemoConsole(); err != nil {
		return fail(err)
	}
	d.sim = sim.New(sim.Config{Seed: int64(d.f.seed), AutoProvision: true})
	if d.f.broker == "fix" {
		d.strict = d.f.fixDialect == string(fixwire.DialectFIX44)
		if d.strict {
			if d.symbols, err = d.strictSymbols(ctx); err != nil {
				return fail(err)
			}
			d.landings, d.failures = &landings{d: d}, &reconcileFailures{d: d}
		}
		d.fixToken = rand.Text()
		front, err := fixfront.Start("127.0.0.1:0", d.sim, d.sim, fixfront.Options{Token: d.fixToken, Log: d.log, MaxConns: fixFrontMaxConns(), Strict: d.strict})
		if err != nil {
			return fail(err)
		}
		defer front.Close()
		d.front = front
		d.fixAddr = front.Addr()
		if d.strict {
			d.printf("the followers trade over standard FIX 4.4 (fix44) through the simulator's strict FIX front on %s, with its %d symbols as the nodes' list and their positions in the position book; the masters are read in-process", d.fixAddr, len(d.symbols))
		} else {
			d.printf("the nodes trade over FIX 4.4 through the simulator's FIX front on %s", d.fixAddr)
		}
	}
	if err := d.createAccounts(ctx); err != nil {
		if ctx.Err() != nil {
			return interrupted("creating the accounts")
		}
		return fail(err)
	}
	if d.f.losingAfter > 0 {
		if err := d.guardFollower(ctx); err != nil {
			return fail(err)
		}
	}

	// Nodes: each with its own connection pool, as separate processes would have.
	stopNodes := d.startNodes(ctx)
	nodesStopped := false
	defer func() {
		if !nodesStopped {
			stopNodes()
		}
	}()
	if len(d.nodes) < d.f.nodes {
		return fail(errors.New("a node did not start (see the log)"))
	}

	quotes, err := d.sim.Connect(ctx, broker.Credentials{Login: "demo-quotes"})
	if err != nil {
		return fail(err)
	}
	defer quotes.Close()
	d.gen = activity.New(activity.Config{Control: d.sim, Quotes: quotes, Masters: d.masterLogins(), Seed: d.f.seed, Comment: "demo", Logger: d.log})
	web := &statusHTTP{title: "copierd demo", nodes: func() []*actors.Node { return d.nodes }, summary: d.summary}
	web.pool.Store(d.pool)
	if d.front != nil {
		// The nodes' broker: a front that stopped accepting leaves every dropped session
		// unable to log on again.
		web.addCheck("FIX front", d.front.Health)
	}
	httpCtx, stopHTTP := context.WithCancel(context.Background())
	httpDone := make(chan struct{})
	if listener != nil {
		if err := mountConsole(web, d.console.options(d.pool, d.nodes[0], d.sim, d.log)); err != nil {
			stopHTTP()
			return fail(err)
		}
		go func() {
			defer close(httpDone)
			serveHTTP(httpCtx, listener, web.handler(), 0, d.log)
		}()
		d.printf("console: http://%s/  (sign in with token %s; status page /status, also /healthz, /readyz, /metrics)", listener.Addr(), d.console.token)
	} else {
		close(httpDone)
	}
	defer func() {
		stopHTTP()
		<-httpDone
	}()

	if !d.waitForClaims(ctx) {
		return interrupted("waiting for the nodes to claim the followers")
	}

	// Trade on the masters until ctx ends or the duration passes.
	genCtx, stopGen := context.WithCancel(context.Background())
	genDone := make(chan struct{})
	go func() {
		defer close(genDone)
		d.gen.Run(genCtx, d.f.rate)
	}()
	now := time.Now()
	d.started.Store(&now)
	if d.f.duration > 0 {
		d.printf("trading on %d masters at %v events/s for %v (Ctrl-C to stop early)", len(d.masters), d.f.rate, d.f.duration)
	} else {
		d.printf("trading on %d masters at %v events/s; Ctrl-C to stop", len(d.masters), d.f.rate)
	}
	var durationC <-chan time.Time
	if d.f.duration > 0 {
		t := time.NewTimer(d.f.duration)
		defer t.Stop()
		durationC = t.C
	}
	progress := time.NewTicker(d.f.progress)
	defer progress.Stop()
	var losingC <-chan time.Time
	if d.f.losingAfter > 0 && len(d.followers) > 0 {
		t := time.NewTimer(d.f.losingAfter)
		defer t.Stop()
		losingC = t.C
	}
	streakCtx, stopStreak := context.WithCancel(ctx)
	defer stopStreak()
	streakDone := make(chan bool, 1)
	streakRan := false
loop:
	for {
		select {
		case <-losingC:
			streakRan = true
			go func() { streakDone <- d.losingStreak(streakCtx) }()
		case <-ctx.Done():
			d.printf("interrupted; stopping")
			break loop
		case <-durationC:
			d.printf("%v elapsed; stopping", d.f.duration)
			break loop
		case <-progress.C:
			d.printf("%s", d.summary())
		}
	}
	stopGen()
	<-genDone
	streakOK := true
	if streakRan {
		// The streak ends by itself, at the latest after its steps; interrupted, it proves nothing.
		streakOK = <-streakDone || ctx.Err() != nil
	}
	d.printf("%s", d.summary())

	// Let the copies catch up, then judge.
	d.printf("trading stopped; waiting up to %v for the copies to catch up ...", d.f.settle)
	v := d.settle()
	d.outMu.Lock()
	v.print(d.out)
	d.outMu.Unlock()
	if !streakOK {
		d.printf("verdict: the losing streak did not stop follower %d out", d.followers[0].id)
	}

	web.stopping.Store(true)
	nodesStopped = true
	stopNodes()
	d.reportLeases()
	if !v.ok() || !streakOK {
		return exitFailure
	}
	return exitOK
}

// openPool opens a connection pool on url.
func (d *demo) openPool(ctx context.Context, url, app string, maxConns int32) (*pgxpool.Pool, error) {
	cfg, err := store.ParseConfig(url, store.Options{MaxConns: maxConns, ApplicationName: app})
	if err != nil {
		return nil, err
	}
	return store.OpenConfig(ctx, cfg)
}

// demoSizings are the sizings the demo's followers get in turn: the mixed modes and a
// doubling lot multiplier.
func demoSizings() []setup.Sizing {
	return setup.MixedSizings(setup.Sizing{Label: "lot multiplier ×2", Mode: reconcile.SizeLotMultiplier, Multiplier: 2})
}

// createAccounts creates the masters, the followers and their links in the database and
// on the simulator: follower i copies master i mod --masters, with the sizings in turn
// per round of masters.
func (d *demo) createAccounts(ctx context.Context) error {
	sizings := demoSizings()
	var followerMode broker.AccountMode // hedging
	if d.strict {
		// fix44: netting (the position book nets), no SL/TP on the wire, no equity.
		sizings, followerMode = fix44Sizings(), broker.Netting
	}
	sizingOf := func(i int) int { return ((i - 1) / d.f.masters) % len(sizings) }
	world, err := setup.Create(ctx, d.pool, d.sim, setup.Plan{Platform: "sim", Server: "demo", Currency: "USD",
		Masters: d.f.masters, Followers: d.f.followers, MasterBalance: 100_000, FollowerMode: followerMode,
		FollowerBalance: func(i int) float64 { return 50_000 + 25_000*float64(i%3) },
		Links: func(i int) []setup.LinkPlan {
			mi := (i - 1) % d.f.masters
			st := sizings[sizingOf(i)].Settings(false)
			if d.strict {
				st.Stops = reconcile.Stops{Mode: reconcile.StopsNone}
			}
			return []setup.LinkPlan{{Master: mi, Magic: 7000 + int64(mi+1), Settings: st}}
		}})
	if err != nil {
		return err
	}
	for _, m := range world.Masters {
		d.masters = append(d.masters, demoMaster{id: m.ID, login: m.Login})
	}
	for _, l := range world.Links { // one per follower, in follower order
		d.followers = append(d.followers, demoFollower{id: l.Follower.ID, login: l.Follower.Login, master: l.Master, magic: l.Magic, settings: l.Settings})
	}
	perMode := make([]int, len(sizings))
	for i := 1; i <= d.f.followers; i++ {
		perMode[sizingOf(i)]++
	}
	var modes []string
	for i, s := range sizings {
		if perMode[i] > 0 {
			modes = append(modes, fmt.Sprintf("%d %s", perMode[i], s.Label))
		}
	}
	if d.strict {
		d.printf("created %d masters and %d netting followers (links, copied without SL/TP: %s)", len(d.masters), len(d.followers), strings.Join(modes, ", "))
		return nil
	}
	d.printf("created %d masters and %d followers (links: %s)", len(d.masters), len(d.followers), strings.Join(modes, ", "))
	return nil
}

// masterLogins returns the masters' logins.
func (d *demo) masterLogins() []string {
	out := make([]string, len(d.masters))
	for i, m := range d.masters {
		out[i] = m.login
	}
	return out
}

// startNodes starts the nodes and returns the function that stops them (in parallel,
// releasing their leases) and closes their pools.
func (d *demo) startNodes(ctx context.Context) (stop func()) {
	var pools []*pgxpool.Pool
	stop = func() {
		var wg sync.WaitGroup
		for _, n := range d.nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if err := n.Stop(sctx); err != nil {
					d.log.Error().Err(err).Str("node", n.Config().NodeID).Msg("node stop failed")
				}
			}()
		}
		wg.Wait()
		for _, p := range pools {
			p.Close()
		}
	}
	for i := 1; i <= d.f.nodes; i++ {
		id := fmt.Sprintf("demo-%d", i)
		pool, err := d.openPool(ctx, d.dbURL, "copierd-"+id, 8)
		if err != nil {
			d.log.Error().Err(err).Str("node", id).Msg("open pool")
			return stop
		}
		pools = append(pools, pool)
		var bk broker.Broker = d.sim
		var observe func(actors.Signal)
		if d.fixAddr != "" {
			// One FIX broker per node, as separate processes would have.
			cfg := fix.Config{Addr: d.fixAddr, Token: d.fixToken, Log: d.log}
			if d.strict {
				// The store-backed book, as copierd run keeps it, fenced by this node.
				cfg.Dialect, cfg.Symbols, cfg.PositionMode = fixwire.DialectFIX44, d.symbols, broker.Netting
				cfg.Book = landingBook{Book: storeBook{pool: pool, node: id, platform: "sim"}, l: d.landings}
				observe = d.failures.observe
			}
			fb, err := fix.New(cfg)
			if err != nil {
				d.log.Error().Err(err).Str("node", id).Msg("fix broker")
				return stop
			}
			bk = fb
			if d.strict {
				// The strict venue serves no position feed: the masters are read in-process.
				masters := make(map[string]bool, len(d.masters))
				for _, m := range d.masters {
					masters[m.login] = true
				}
				bk = splitBroker{masters: masters, master: d.sim, other: fb}
			}
		}
		n, err := actors.Start(ctx, actors.Config{NodeID: id, Platform: "sim", Capacity: d.f.capacity, Lease: d.timing, EquityEvery: time.Second},
			actors.Deps{Pool: pool, Broker: bk, Logger: d.log, Credentials: d.console.credentials(), Observe: observe})
		if err != nil {
			d.log.Error().Err(err).Str("node", id).Msg("start node")
			return stop
		}
		d.nodes = append(d.nodes, n)
	}
	d.printf("started %d nodes (capacity %d each; lease %v, fence %v, cycle every %v)",
		len(d.nodes), d.f.capacity, d.timing.Lease, d.timing.Fence, d.timing.Interval)
	return stop
}

// waitForClaims waits until the nodes own every follower (or 30 s pass); it returns false
// when ctx ended.
func (d *demo) waitForClaims(ctx context.Context) bool {
	start := time.Now()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		owned := 0
		for _, n := range d.nodes {
			owned += n.Summary().Accounts
		}
		if owned >= len(d.followers) {
			d.printf("the nodes own all %d followers after %v", len(d.followers), time.Since(start).Round(10*time.Millisecond))
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			d.printf("the nodes own %d of %d followers after 30s; trading anyway", owned, len(d.followers))
			return true
		case <-tick.C:
		}
	}
}

// summary is the one-line progress summary (also shown on the status page).
func (d *demo) summary() string {
	var b strings.Builder
	if t := d.started.Load(); t != nil {
		fmt.Fprintf(&b, "[%5.0fs] ", time.Since(*t).Seconds())
	}
	b.WriteString("owned")
	var ok, failed int64
	for _, n := range d.nodes {
		fmt.Fprintf(&b, " %s=%d", n.Config().NodeID, n.Summary().Accounts)
		ok += n.Metrics().OrdersOK.Load()
		failed += ordersFailed(n.Metrics())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	masterPos, copies := 0, 0
	for _, m := range d.masters {
		ps, _ := d.sim.AccountPositions(ctx, m.login)
		masterPos += len(ps)
	}
	for _, f := range d.followers {
		ps, _ := d.sim.AccountPositions(ctx, f.login)
		copies += len(ps)
	}
	fmt.Fprintf(&b, " | master positions %d | follower copies %d", masterPos, copies)
	if d.gen != nil {
		fmt.Fprintf(&b, " | master events %d (%d failed)", d.gen.Counts().Events(), d.gen.Counts().Failures)
	}
	fmt.Fprintf(&b, " | orders ok %d failed %d", ok, failed)
	if d.strict {
		fmt.Fprintf(&b, " | fills at the strict front %d | failed reconciles %d", d.landings.count.Load(), d.failures.count.Load())
	}
	return b.String()
}

// settle polls the verdict until every follower is in line or --settle passes.
func (d *demo) settle() verdict {
	deadline := time.Now().Add(d.f.settle)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		v := d.check()
		if v.ok() || !time.Now().Before(deadline) {
			return v
		}
		<-tick.C
	}
}

// verdict is the end-of-run comparison of every follower with its master.
type verdict struct {
	followers, inLine int
	stopOuts          string // the stop-outs line
	masterPositions   int
	copies            int
	problems          []string // one per follower out of line
}

// ok reports whether every follower is in line.
func (v verdict) ok() bool { return v.inLine == v.followers }

// print writes the verdict.
func (v verdict) print(w io.Writer) {
	if v.ok() {
		fmt.Fprintf(w, "verdict: OK — all %d followers are in line with their masters (%d copies of %d master positions; %s)\n",
			v.followers, v.copies, v.masterPositions, v.stopOuts)
		return
	}
	fmt.Fprintf(w, "verdict: NOT IN LINE — %d of %d followers are in line with their masters; the others:\n", v.inLine, v.followers)
	const show = 10
	for i, p := range v.problems {
		if i == show {
			fmt.Fprintf(w, "  ... and %d more\n", len(v.problems)-show)
			break
		}
		fmt.Fprintf(w, "  %s\n", p)
	}
}

// check compares every follower's copies with its master's open positions: exactly one
// copy (matched by the link's magic and the mc<ticket> comment marker) per open master
// position, none of a closed one, the master's side, SL and TP, and for lot-multiplier
// links the master's volume times the multiplier. Followers of other modes must have a
// positive volume (their size depends on balances at the time of the copy).
func (d *demo) check() verdict {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	masterPos := make([][]broker.Position, len(d.masters))
	v := verdict{followers: len(d.followers)}
	stopped := d.stoppedOut(ctx)
	v.stopOuts = stopOutLine(stopped)
	for i, m := range d.masters {
		ps, err := d.sim.AccountPositions(ctx, m.login)
		if err != nil {
			continue
		}
		masterPos[i] = ps
		v.masterPositions += len(ps)
	}
	for _, f := range d.followers {
		ps, err := d.sim.AccountPositions(ctx, f.login)
		if err != nil {
			v.problems = append(v.problems, fmt.Sprintf("follower %d: %s", f.id, oneLine(err)))
			continue
		}
		v.copies += len(ps)
		if stopped[f.id] != nil {
			// Stopped out: its copies were closed and nothing new is copied.
			if len(ps) != 0 {
				v.problems = append(v.problems, fmt.Sprintf("follower %d is stopped out but holds %d positions", f.id, len(ps)))
				continue
			}
			v.inLine++
			continue
		}
		why := ""
		if d.strict {
			held, err := storeBook{pool: d.pool, platform: "sim"}.Positions(ctx, f.login)
			if err != nil {
				v.problems = append(v.problems, fmt.Sprintf("follower %d: position book: %s", f.id, oneLine(err)))
				continue
			}
			book := make([]broker.Position, len(held))
			for i, p := range held {
				book[i] = p.Position
			}
			why = nettingProblem(f, ps, book, masterPos[f.master])
		} else {
			why = followerProblem(f, d.masters[f.master].login, ps, masterPos[f.master])
		}
		if why != "" {
			v.problems = append(v.problems, fmt.Sprintf("follower %d (%s, master %d): %s", f.id, f.settings.Sizing.Mode, d.masters[f.master].id, why))
			continue
		}
		v.inLine++
	}
	return v
}

// followerProblem returns what is wrong with one follower's positions, or "": the
// stress tool's check (exactly one copy per open master position, none of a closed one,
// by the link's magic and the mc<ticket> marker), then each copy's side, symbol, SL and
// TP, and for lot-multiplier links the master's volume times the multiplier. Copies of
// other modes need a positive volume (their size depends on balances at the time).
func followerProblem(f demoFollower, master string, ps, masterPs []broker.Position) string {
	res := stress.CheckPositions([]stress.CheckLink{{Master: master, Follower: f.login, Magic: f.magic}},
		map[string][]broker.Position{master: masterPs, f.login: ps})
	if !res.Clean() {
		i := res.Issues[0]
		if i.FollowerTicket != 0 {
			return fmt.Sprintf("position %d: %s", i.FollowerTicket, i.Detail)
		}
		return fmt.Sprintf("master ticket %d: %s", i.MasterTicket, i.Detail)
	}
	open := make(map[int64]broker.Position, len(masterPs))
	for _, p := range masterPs {
		open[p.Ticket] = p
	}
	for _, p := range ps {
		mt, _ := reconcile.ParseMarker(p.Comment) // the check above read it
		mp := open[mt]
		switch {
		case p.Side != mp.Side || p.Symbol != mp.Symbol:
			return fmt.Sprintf("position %d is %s %s, master ticket %d is %s %s", p.Ticket, p.Side, p.Symbol, mt, mp.Side, mp.Symbol)
		case p.SL != mp.SL || p.TP != mp.TP:
			return fmt.Sprintf("position %d has SL/TP %v/%v, master ticket %d has %v/%v", p.Ticket, p.SL, p.TP, mt, mp.SL, mp.TP)
		case f.settings.Sizing.Mode == reconcile.SizeLotMultiplier:
			want := reconcile.RoundDownToStep(mp.Volume*f.settings.Sizing.Multiplier, 0.01)
			if math.Abs(p.Volume-want) > 1e-9 {
				return fmt.Sprintf("position %d has %v lots, want %v (master ticket %d: %v × %v)", p.Ticket, p.Volume, want, mt, mp.Volume, f.settings.Sizing.Multiplier)
			}
		case !(p.Volume > 0):
			return fmt.Sprintf("position %d has volume %v", p.Ticket, p.Volume)
		}
	}
	return ""
}

// reportLeases prints whether the stopped nodes released every lease.
func (d *demo) reportLeases() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := store.Leases(ctx, d.pool, nil)
	if err != nil {
		fmt.Fprintf(d.errOut, "copierd demo: reading leases: %s\n", oneLine(err))
		return
	}
	held := 0
	for _, r := range rows {
		if r.NodeID != "" {
			held++
		}
	}
	if held == 0 {
		d.printf("nodes stopped; all %d leases released", len(rows))
	} else {
		d.printf("nodes stopped; %d of %d leases still held (they expire within %v)", held, len(rows), d.timing.Lease)
	}
}
