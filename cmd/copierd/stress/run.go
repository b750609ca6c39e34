package stress

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/bridge"
	"github.com/snapcopier/copier/broker/sim"
	"github.com/snapcopier/copier/broker/sim/activity"
	"github.com/snapcopier/copier/broker/sim/fixfront"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/pgcluster"
)

// Platform is the platform of the stress accounts (the nodes' --platform).
const Platform = "sim"

// account is one simulated account of the run.
type account struct {
	id    int64
	login string
}

// ownershipSample is the number of followers each node owned at one moment, by the
// database.
type ownershipSample struct {
	At     time.Time      `json:"at"`
	T      float64        `json:"t_s"` // seconds since the load started (negative before)
	Counts map[string]int `json:"counts"`
	Free   int            `json:"free"`
}

// run is one stress run.
type run struct {
	o   Options
	out io.Writer

	logMu    sync.Mutex
	runLog   *os.File
	faultLog *os.File

	cluster    *pgcluster.Cluster
	dbURL      string
	pgAddr     string
	pool       *pgxpool.Pool
	sim        *sim.Server
	bridge     *bridge.Server
	bridgeAddr string
	bridgeDone chan error
	front      *fixfront.Front // with Options.Broker "fix"
	token      string
	proxies    *proxies

	masters   []account
	followers []account
	links     []CheckLink
	gen       *activity.Generator

	nodesMu  sync.Mutex
	nodes    []*nodeProc
	nextNode int

	setupStart time.Time
	loadStart  atomic.Pointer[time.Time]
	phase      atomic.Pointer[string]

	faultsMu     sync.Mutex
	scale        ScaleResult // the scale scenario's measurements
	faults       []FaultRecord
	freezes      []Freeze
	failovers    []Failover
	faultsActive atomic.Int64

	samplesMu sync.Mutex
	samples   []ownershipSample

	rateSteps  *FindRateResult // find-rate's ramp, once it ended
	ordersSeen atomic.Int64    // follower orders seen by the progress reader
	lastSeq    int64           // progress reader only
	httpClient *http.Client
}

// Run runs one stress scenario and returns its report; out receives the progress bar
// and the text summary. The error reports a failure of the run itself (it could not set
// up, or was interrupted); a run whose invariants do not hold returns its report with OK
// false and a nil error. Everything the run started is stopped before it returns; the
// output directory keeps the node logs, faults.log, run.log, report.json and the charts.
func Run(ctx context.Context, opts Options, out io.Writer) (Report, error) {
	if err := opts.Validate(); err != nil {
		return Report{}, err
	}
	if out == nil {
		out = io.Discard
	}
	r := &run{o: opts, out: out, httpClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	r.setPhase("setup")
	if err := os.MkdirAll(opts.OutDir, 0o755); err != nil {
		return Report{}, fmt.Errorf("stress: output directory: %w", err)
	}
	var err error
	if r.runLog, err = os.Create(filepath.Join(opts.OutDir, "run.log")); err != nil {
		return Report{}, fmt.Errorf("stress: %w", err)
	}
	defer r.runLog.Close()
	if r.faultLog, err = os.Create(filepath.Join(opts.OutDir, "faults.log")); err != nil {
		return Report{}, fmt.Errorf("stress: %w", err)
	}
	defer r.faultLog.Close()
	defer r.teardown()
	return r.execute(ctx)
}

func (r *run) setPhase(p string) { r.phase.Store(&p) }

func (r *run) getPhase() string {
	if p := r.phase.Load(); p != nil {
		return *p
	}
	return ""
}

// logf writes one timestamped line to run.log.
func (r *run) logf(format string, args ...any) {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	fmt.Fprintf(r.runLog, "%s %s\n", time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// since returns seconds since the load started (negative before it did; 0 when it has
// not started).
func (r *run) since(t time.Time) float64 {
	if ls := r.loadStart.Load(); ls != nil {
		return round3(t.Sub(*ls).Seconds())
	}
	return 0
}

func (r *run) execute(ctx context.Context) (Report, error) {
	r.setupStart = time.Now()
	o := r.o
	r.logf("stress run: seed %d, %d masters, %d followers, %d nodes (capacity %d), lease %v fence %v interval %v, rate %v/s for %v, faults %v, enforce tokens %v",
		o.Seed, o.Masters, o.Followers, o.Nodes, o.Capacity, o.Lease, o.Fence, o.Interval, o.Rate, o.Duration, o.Faults, o.EnforceTokens)
	fmt.Fprintf(r.out, "stress: seed %d, %d masters, %d followers, %d nodes, lease %v/fence %v/interval %v, %v/s for %v, faults %v, output %s\n",
		o.Seed, o.Masters, o.Followers, o.Nodes, o.Lease, o.Fence, o.Interval, o.Rate, o.Duration, faultNames(o.Faults), o.OutDir)

	if err := r.setupDatabase(ctx); err != nil {
		return Report{}, err
	}
	if err := r.setupAccounts(ctx); err != nil {
		return Report{}, err
	}
	if err := r.setupBroker(); err != nil {
		return Report{}, err
	}
	r.proxies = newProxies(r.pgAddr)

	// Background observers: ownership samples, node metrics, progress.
	obsCtx, stopObs := context.WithCancel(context.Background())
	var obs sync.WaitGroup
	defer func() {
		stopObs()
		obs.Wait()
	}()
	obs.Add(2)
	go func() { defer obs.Done(); r.sampleOwnership(obsCtx) }()
	go func() { defer obs.Done(); r.scrapeNodes(obsCtx) }()
	var bar *progress
	if o.Progress {
		bar = newProgress(r.out, o.Duration+o.Converge)
		obs.Add(1)
		go func() { defer obs.Done(); r.showProgress(obsCtx, bar) }()
	}

	r.setPhase("nodes")
	first := o.Nodes
	if o.Scenario == ScenarioScale {
		first = 1 // the others join during the load
	}
	for i := 0; i < first; i++ {
		if _, err := r.startNode(); err != nil {
			return Report{}, err
		}
	}
	if err := r.waitOwned(ctx, 60*time.Second+time.Duration(o.Followers)*5*time.Millisecond); err != nil {
		return Report{}, err
	}
	copyWait := 60*time.Second + time.Duration(o.Followers)*5*time.Millisecond
	if o.FindRate {
		copyWait = 60*time.Second + time.Duration(o.Followers)*20*time.Millisecond
	}
	if all, err := r.waitCopying(ctx, copyWait); err != nil {
		return Report{}, err
	} else if !all && o.FindRate {
		r.stopAllNodes()
		return Report{}, fmt.Errorf("stress: find-rate: not every follower was copying after %v; the ramp would measure the takeover, not the rate", copyWait)
	}

	// Load and faults.
	now := time.Now()
	r.loadStart.Store(&now)
	r.setPhase("load")
	r.logf("load starts")
	loadCtx, stopLoad := context.WithCancel(ctx)
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		if o.FindRate {
			fr := r.findRate(loadCtx)
			r.rateSteps = &fr
			return
		}
		r.gen.Run(loadCtx, o.Rate)
	}()
	faultsDone := make(chan struct{})
	if o.FindRate {
		close(faultsDone) // no faults; the ramp ends the load
	} else if o.Scenario == ScenarioScale {
		go func() {
			defer close(faultsDone)
			r.runScale(ctx)
		}()
	} else {
		plan := planFaults(o, mrand.New(mrand.NewPCG(o.Seed, 0xfa0175)))
		for _, f := range plan {
			r.logf("planned fault at +%.1fs: %s %s hold %v", f.At.Seconds(), f.Kind, f.Variant, f.Hold)
		}
		go func() {
			defer close(faultsDone)
			r.runFaults(ctx, plan)
		}()
	}
	endOfLoad := time.NewTimer(o.Duration)
	if o.FindRate {
		endOfLoad.Stop()
	}
	select {
	case <-ctx.Done():
	case <-endOfLoad.C:
	case <-loadDone: // the ramp ended (find-rate)
	}
	endOfLoad.Stop()
	if ctx.Err() == nil {
		r.setPhase("healing")
	}
	<-faultsDone
	stopLoad()
	<-loadDone
	loadEnd := time.Now()
	r.logf("load stops after %.1fs (%d master events)", loadEnd.Sub(now).Seconds(), r.gen.Counts().Events())
	if err := ctx.Err(); err != nil {
		r.stopAllNodes()
		return Report{}, fmt.Errorf("stress: interrupted: %w", err)
	}

	// Quiet convergence, then the verdict.
	r.setPhase("converge")
	converged, convergeS := r.converge(ctx, loadEnd)
	r.setPhase("verdict")
	final, err := r.collect(ctx)
	if err != nil {
		r.stopAllNodes()
		return Report{}, err
	}
	r.setPhase("stopping")
	exits := r.stopAllNodes()
	stopObs()
	obs.Wait()
	if bar != nil {
		bar.finish()
	}

	rep := r.report(final, exits, loadEnd.Sub(now), converged, convergeS)
	if err := r.writeOutputs(&rep, final); err != nil {
		return rep, err
	}
	rep.WriteSummary(r.out)
	return rep, nil
}

func faultNames(ks []FaultKind) string {
	if len(ks) == 0 {
		return "none"
	}
	s := ""
	for i, k := range ks {
		if i > 0 {
			s += ","
		}
		s += string(k)
	}
	return s
}

// setupDatabase starts (or connects to) PostgreSQL, migrates it and installs the audit.
func (r *run) setupDatabase(ctx context.Context) error {
	if r.o.DatabaseURL == "" {
		fmt.Fprintln(r.out, "stress: starting a throwaway PostgreSQL ...")
		// synchronous_commit on: a restart must not lose acknowledged commits (the engine
		// relies on the database's durability; losing a committed claim is not a fault
		// of the engine).
		cl, err := pgcluster.Start(ctx, pgcluster.Options{Settings: map[string]string{
			"synchronous_commit": "on", "max_connections": "400",
		}})
		if err != nil {
			return fmt.Errorf("stress: %w", err)
		}
		r.cluster = cl
		r.dbURL = cl.URL("postgres")
		r.pgAddr = cl.Addr()
		r.logf("PostgreSQL on %s (data %s)", cl.Addr(), cl.Dir())
	} else {
		cfg, err := store.ParseConfig(r.o.DatabaseURL, store.Options{})
		if err != nil {
			return fmt.Errorf("stress: %w", err)
		}
		if _, err := withHost(r.o.DatabaseURL, "127.0.0.1:1"); err != nil {
			return fmt.Errorf("stress: %w", err)
		}
		r.dbURL = r.o.DatabaseURL
		r.pgAddr = net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port)))
		r.logf("external PostgreSQL on %s", r.pgAddr)
	}
	cfg, err := store.ParseConfig(r.dbURL, store.Options{MaxConns: 8, ApplicationName: "copierd-stress"})
	if err != nil {
		return fmt.Errorf("stress: %w", err)
	}
	pool, err := store.OpenConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("stress: %w", err)
	}
	r.pool = pool
	mctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := store.Migrate(mctx, pool); err != nil {
		return fmt.Errorf("stress: migrate: %w", err)
	}
	existing, err := store.Leases(mctx, pool, nil)
	if err != nil {
		return fmt.Errorf("stress: %w", err)
	}
	if len(existing) > 0 {
		return fmt.Errorf("stress: the database already holds %d follower accounts; the stress run needs an empty one (omit --database-url for a throwaway PostgreSQL)", len(existing))
	}
	if err := installAudit(mctx, pool); err != nil {
		return fmt.Errorf("stress: audit: %w", err)
	}
	return nil
}

// stressSizings are the link settings followers get in turn: mixed sizing modes, no
// filters, any age, force_min (no legitimate skip: every open master position must have
// its copy).
func stressSizings() []reconcile.Settings {
	mk := func(f func(*reconcile.Sizing)) reconcile.Settings {
		s := reconcile.DefaultSettings()
		s.Window.MaxAgeSeconds = 0
		s.Sizing.ForceMin = true
		f(&s.Sizing)
		return s
	}
	return []reconcile.Settings{
		mk(func(z *reconcile.Sizing) { z.Mode, z.Multiplier = reconcile.SizeLotMultiplier, 1 }),
		mk(func(z *reconcile.Sizing) { z.Mode, z.FixedLot = reconcile.SizeFixedLot, 0.1 }),
		mk(func(z *reconcile.Sizing) { z.Mode, z.Multiplier = reconcile.SizeBalanceRatio, 1 }),
		mk(func(z *reconcile.Sizing) { z.Mode, z.Multiplier = reconcile.SizeEquityRatio, 1 }),
		mk(func(z *reconcile.Sizing) { z.Mode, z.Multiplier = reconcile.SizeLotMultiplier, 0.5 }),
		mk(func(z *reconcile.Sizing) { z.Mode, z.RiskPercent, z.MaxLot = reconcile.SizeRiskPercent, 0.5, 2 }),
	}
}

// quoteLogin is a fault-free account the load generator reads prices with.
const quoteLogin = "stress-quotes"

// setupAccounts creates the masters, followers and links on the simulator and in the
// database. Every tenth follower copies a second master.
func (r *run) setupAccounts(ctx context.Context) error {
	o := r.o
	r.sim = sim.New(sim.Config{Seed: int64(o.Seed), Options: broker.ServerOptions{EnforceTokens: o.EnforceTokens, DedupRequests: o.Dedup}})
	const server = "stress"
	if err := r.sim.Provision(ctx, broker.AccountSpec{Login: quoteLogin, Balance: 1000}); err != nil {
		return fmt.Errorf("stress: %w", err)
	}
	if err := r.sim.SetFaults(ctx, quoteLogin, broker.Faults{}); err != nil { // its own, empty profile
		return fmt.Errorf("stress: %w", err)
	}
	quotes, err := r.sim.Connect(ctx, broker.Credentials{Login: quoteLogin})
	if err != nil {
		return fmt.Errorf("stress: %w", err)
	}
	var masterJobs, followerJobs []func() error
	for i := 1; i <= o.Masters; i++ {
		m := account{id: int64(i), login: fmt.Sprintf("master-%d", i)}
		r.masters = append(r.masters, m)
		if err := r.sim.Provision(ctx, broker.AccountSpec{Login: m.login, Balance: 100_000, Leverage: 100, Mode: broker.Hedging}); err != nil {
			return fmt.Errorf("stress: %w", err)
		}
		masterJobs = append(masterJobs, func() error {
			return store.CreateAccount(ctx, r.pool, store.Account{ID: m.id, Platform: Platform, Role: store.RoleMaster, Enabled: true, Login: m.login, Server: server})
		})
	}
	sizings := stressSizings()
	type linkSpec struct {
		master   account
		magic    int64
		settings []byte
	}
	for i := 1; i <= o.Followers; i++ {
		f := account{id: 1_000_000 + int64(i), login: fmt.Sprintf("follower-%d", i)}
		r.followers = append(r.followers, f)
		balance := 50_000 + 50_000*float64(i%3)
		if err := r.sim.Provision(ctx, broker.AccountSpec{Login: f.login, Balance: balance, Leverage: 100, Mode: broker.Hedging}); err != nil {
			return fmt.Errorf("stress: %w", err)
		}
		var ls []linkSpec
		masters := []account{r.masters[(i-1)%len(r.masters)]}
		if i%10 == 0 && len(r.masters) > 1 {
			masters = append(masters, r.masters[i%len(r.masters)])
		}
		for k, m := range masters {
			js, err := json.Marshal(sizings[(i+k)%len(sizings)])
			if err != nil {
				return fmt.Errorf("stress: link settings: %w", err)
			}
			ls = append(ls, linkSpec{master: m, magic: 100_000 + m.id, settings: js})
			r.links = append(r.links, CheckLink{Master: m.login, Follower: f.login, Magic: 100_000 + m.id})
		}
		followerJobs = append(followerJobs, func() error {
			if err := store.CreateAccount(ctx, r.pool, store.Account{ID: f.id, Platform: Platform, Role: store.RoleFollower, Enabled: true, Login: f.login, Server: server}); err != nil {
				return err
			}
			for _, l := range ls {
				if _, err := store.CreateLink(ctx, r.pool, store.Link{MasterID: l.master.id, FollowerID: f.id, Enabled: true, Magic: l.magic, Settings: l.settings}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	// Masters first: the links refer to them.
	for _, jobs := range [][]func() error{masterJobs, followerJobs} {
		if err := parallel(ctx, 8, jobs); err != nil {
			return fmt.Errorf("stress: creating accounts: %w", err)
		}
	}
	logins := make([]string, len(r.masters))
	for i, m := range r.masters {
		logins[i] = m.login
	}
	r.gen = activity.New(activity.Config{Control: r.sim, Quotes: quotes, Masters: logins, Seed: o.Seed, Comment: "stress"})
	r.logf("created %d masters, %d followers, %d links", len(r.masters), len(r.followers), len(r.links))
	return nil
}

// parallel runs jobs on n workers and returns the first error (the remaining jobs are
// skipped after one fails or ctx ends).
func parallel(ctx context.Context, n int, jobs []func() error) error {
	var mu sync.Mutex
	var first error
	next := 0
	var wg sync.WaitGroup
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if first != nil || next >= len(jobs) {
					mu.Unlock()
					return
				}
				if err := ctx.Err(); err != nil {
					first = err
					mu.Unlock()
					return
				}
				job := jobs[next]
				next++
				mu.Unlock()
				if err := job(); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// setupBroker serves the simulator over the bridge protocol on a loopback port.
func (r *run) setupBroker() error {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Errorf("stress: token: %w", err)
	}
	r.token = hex.EncodeToString(b[:])
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("stress: bridge listener: %w", err)
	}
	r.bridgeAddr = l.Addr().String()
	r.bridge = bridge.NewServer(r.sim, r.sim, bridge.ServerOptions{Token: r.token, Logger: zerolog.Nop(), MaxInflight: 4096})
	r.bridgeDone = make(chan error, 1)
	go func() { r.bridgeDone <- r.bridge.Serve(l) }()
	r.logf("simulator serving the bridge on %s", r.bridgeAddr)
	if r.o.Broker == "fix" {
		if r.front, err = fixfront.Start("127.0.0.1:0", r.sim, r.sim, fixfront.Options{Token: r.token}); err != nil {
			return fmt.Errorf("stress: FIX front: %w", err)
		}
		r.logf("simulator serving FIX 4.4 on %s; the nodes trade over FIX", r.front.Addr())
	}
	return nil
}

// brokerURL is the nodes' --broker.
func (r *run) brokerURL() string {
	if r.front != nil {
		return "fix://" + r.front.Addr()
	}
	return "bridge://" + r.bridgeAddr
}

// startNode starts the next node process with its own database proxy.
func (r *run) startNode() (*nodeProc, error) {
	r.nodesMu.Lock()
	r.nextNode++
	id := fmt.Sprintf("node-%d", r.nextNode)
	r.nodesMu.Unlock()
	px, err := r.proxies.open(id)
	if err != nil {
		return nil, fmt.Errorf("stress: %w", err)
	}
	dbURL, err := withHost(r.dbURL, px.addr)
	if err != nil {
		px.stop()
		return nil, fmt.Errorf("stress: %w", err)
	}
	o := r.o
	args := []string{
		"--platform", Platform, "--broker", r.brokerURL(), "--node-id", id,
		"--capacity", strconv.Itoa(o.Capacity), "--lease", o.Lease.String(), "--fence", o.Fence.String(),
		"--interval", o.Interval.String(), "--reconcile-every", o.ReconcileEvery.String(),
		"--http", "127.0.0.1:0", "--log-format", "json", "--log-level", o.NodeLogLevel, "--migrate=false",
	}
	if o.TraceCopies {
		args = append(args, "--trace-copies", filepath.Join(o.OutDir, id+".trace"))
	}
	env := []string{"COPIER_DATABASE_URL=" + dbURL, "COPIER_BRIDGE_TOKEN=" + r.token}
	if r.front != nil {
		env = append(env, "COPIER_FIX_TOKEN="+r.token)
	}
	n, err := startNode(o.Copierd, id, o.OutDir, args, env, px)
	if err != nil {
		px.stop()
		return nil, fmt.Errorf("stress: %w", err)
	}
	r.nodesMu.Lock()
	r.nodes = append(r.nodes, n)
	r.nodesMu.Unlock()
	r.logf("started %s (pid %d, db proxy %s, http %s)", id, n.pid, px.addr, n.httpAddr)
	return n, nil
}

// allNodes returns every node started so far.
func (r *run) allNodes() []*nodeProc {
	r.nodesMu.Lock()
	defer r.nodesMu.Unlock()
	return slices.Clone(r.nodes)
}

// liveNodes returns the nodes that run now (frozen ones included when withFrozen).
func (r *run) liveNodes(withFrozen bool) []*nodeProc {
	var out []*nodeProc
	for _, n := range r.allNodes() {
		switch n.getState() {
		case nodeRunning:
			out = append(out, n)
		case nodeFrozen:
			if withFrozen {
				out = append(out, n)
			}
		}
	}
	return out
}

// waitOwned waits until every follower is owned by a node.
func (r *run) waitOwned(ctx context.Context, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		free, err := r.unowned(ctx)
		if err == nil && free == 0 {
			r.logf("every follower is owned")
			return nil
		}
		for _, n := range r.allNodes() {
			if !n.alive() {
				return fmt.Errorf("stress: node %s exited at start (see %s)", n.id, n.logPath)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("stress: the nodes did not claim every follower within %v (%d free; last error %v)", within, free, err)
		}
		if !sleepCtx(ctx, 200*time.Millisecond) {
			return fmt.Errorf("stress: interrupted: %w", ctx.Err())
		}
	}
}

// waitCopying waits until the nodes report every follower in phase copying (loaded,
// connected, reconciled), so the load meets a cluster that is ready. When that takes
// longer than within, the load starts anyway (the run log says so).
// It reports whether every follower was copying in time.
func (r *run) waitCopying(ctx context.Context, within time.Duration) (bool, error) {
	start := time.Now()
	deadline := start.Add(within)
	for {
		r.scrapeAll(ctx)
		var copying int64
		for _, n := range r.liveNodes(false) {
			n.mu.Lock()
			copying += n.stats.copying
			n.mu.Unlock()
		}
		if copying >= int64(len(r.followers)) {
			r.logf("every follower is copying after %.1fs", time.Since(start).Seconds())
			return true, nil
		}
		if time.Now().After(deadline) {
			r.logf("only %d of %d followers are copying after %v; starting the load anyway", copying, len(r.followers), within)
			return false, nil
		}
		if !sleepCtx(ctx, 500*time.Millisecond) {
			return false, fmt.Errorf("stress: interrupted: %w", ctx.Err())
		}
	}
}

// unowned counts followers without a live lease.
func (r *run) unowned(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var n int
	err := r.pool.QueryRow(ctx, `SELECT count(*) FROM trading_accounts
		WHERE role = 'follower' AND (node_id IS NULL OR lease_until IS NULL OR lease_until < now())`).Scan(&n)
	return n, err
}

// sleepCtx waits d or until ctx ends; it reports whether the whole wait passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// sampleOwnership records how many followers each node owns, every second.
func (r *run) sampleOwnership(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		r.sampleOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r *run) sampleOnce(ctx context.Context) {
	if r.pool == nil {
		return
	}
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	rows, err := r.pool.Query(qctx, `SELECT coalesce(node_id, ''), count(*) FROM trading_accounts
		WHERE role = 'follower' GROUP BY 1`)
	if err != nil {
		return
	}
	s := ownershipSample{At: time.Now(), Counts: map[string]int{}}
	for rows.Next() {
		var node string
		var n int
		if err := rows.Scan(&node, &n); err != nil {
			rows.Close()
			return
		}
		if node == "" {
			s.Free = n
		} else {
			s.Counts[node] = n
		}
	}
	rows.Close()
	if rows.Err() != nil {
		return
	}
	r.samplesMu.Lock()
	r.samples = append(r.samples, s)
	r.samplesMu.Unlock()
}

// lastCounts returns the latest ownership sample's counts.
func (r *run) lastCounts() map[string]int {
	r.samplesMu.Lock()
	defer r.samplesMu.Unlock()
	if len(r.samples) == 0 {
		return nil
	}
	return r.samples[len(r.samples)-1].Counts
}

// scrapeNodes reads every live node's /metrics and /proc every two seconds.
func (r *run) scrapeNodes(ctx context.Context) {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.scrapeAll(ctx)
	}
}

func (r *run) scrapeAll(ctx context.Context) {
	var wg sync.WaitGroup
	for _, n := range r.allNodes() {
		if !n.alive() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.sampleProc()
			n.scrapeMetrics(ctx, r.httpClient)
		}()
	}
	wg.Wait()
}

// converge waits for the quiet period, then until every follower is in line and owned
// in two checks in a row, or until the convergence bound passes.
func (r *run) converge(ctx context.Context, loadEnd time.Time) (bool, float64) {
	quietUntil := loadEnd.Add(r.o.Quiet)
	deadline := loadEnd.Add(r.o.Converge)
	streak := 0
	for {
		now := time.Now()
		if !now.Before(quietUntil) {
			free, ferr := r.unowned(ctx)
			pr, perr := r.checkPositions(ctx)
			if ferr == nil && perr == nil && free == 0 && pr.Clean() {
				streak++
				if streak >= 2 {
					s := round3(time.Since(loadEnd).Seconds())
					r.logf("converged %.1fs after the load stopped", s)
					return true, s
				}
			} else {
				streak = 0
				r.logf("converging: %d unowned, duplicates %d, missing %d, orphans %d, unidentified %d (%v %v)",
					free, pr.Duplicates, pr.Missing, pr.Orphans, pr.Unidentified, ferr, perr)
			}
		}
		if now.After(deadline) {
			r.logf("not converged %v after the load stopped", r.o.Converge)
			return false, round3(time.Since(loadEnd).Seconds())
		}
		if !sleepCtx(ctx, time.Second) {
			return false, round3(time.Since(loadEnd).Seconds())
		}
	}
}

// positions reads every account's open positions from the simulator.
func (r *run) positions(ctx context.Context) (map[string][]broker.Position, error) {
	out := make(map[string][]broker.Position, len(r.masters)+len(r.followers))
	for _, list := range [][]account{r.masters, r.followers} {
		for _, a := range list {
			ps, err := r.sim.AccountPositions(ctx, a.login)
			if err != nil {
				return nil, err
			}
			out[a.login] = ps
		}
	}
	return out, nil
}

func (r *run) checkPositions(ctx context.Context) (PositionsResult, error) {
	ps, err := r.positions(ctx)
	if err != nil {
		return PositionsResult{}, err
	}
	return CheckPositions(r.links, ps), nil
}

// finalState is everything the verdict is computed from.
type finalState struct {
	owned     map[string]int // followers per node by the database, before the nodes stop
	orders    []broker.OrderLogEntry
	positions map[string][]broker.Position
	audit     auditResult
	claims    []Claim
}

// collect reads the final state: the order log, the positions, the audit, and a last
// metrics scrape.
func (r *run) collect(ctx context.Context) (finalState, error) {
	var f finalState
	var err error
	r.sampleOnce(ctx)
	f.owned = r.lastCounts()
	if f.orders, err = r.sim.OrderLog(ctx, 0, 0); err != nil {
		return f, fmt.Errorf("stress: order log: %w", err)
	}
	if f.positions, err = r.positions(ctx); err != nil {
		return f, fmt.Errorf("stress: positions: %w", err)
	}
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if f.audit, err = readAudit(actx, r.pool); err != nil {
		return f, fmt.Errorf("stress: audit: %w", err)
	}
	if f.claims, err = readClaims(actx, r.pool); err != nil {
		return f, fmt.Errorf("stress: audit claims: %w", err)
	}
	r.scrapeAll(ctx)
	return f, nil
}

// nodeExit is how a node process ended.
type nodeExit struct {
	state nodeState
	err   error
	ended time.Time
}

// stopAllNodes stops every live node cleanly (in parallel) and reports how each ended.
func (r *run) stopAllNodes() map[string]nodeExit {
	nodes := r.allNodes()
	exits := make(map[string]nodeExit, len(nodes))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			state := n.getState()
			var err error
			if n.alive() && (state == nodeRunning || state == nodeFrozen) {
				err = n.stop(30 * time.Second)
				state = nodeStopping
			} else {
				<-n.done
				n.mu.Lock()
				err = n.exitErr
				n.mu.Unlock()
			}
			n.proxy.stop()
			n.mu.Lock()
			ended := n.ended
			n.mu.Unlock()
			mu.Lock()
			exits[n.id] = nodeExit{state: state, err: err, ended: ended}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return exits
}

// teardown stops whatever is still running: node processes, proxies, the bridge, the
// pool and the throwaway PostgreSQL.
func (r *run) teardown() {
	for _, n := range r.allNodes() {
		if n.alive() {
			_ = n.kill()
			<-n.done
		}
		n.proxy.stop()
	}
	if r.front != nil {
		_ = r.front.Close()
	}
	if r.bridge != nil {
		_ = r.bridge.Close()
		<-r.bridgeDone
	}
	if r.pool != nil {
		r.pool.Close()
	}
	if r.cluster != nil {
		if err := r.cluster.Stop(); err != nil {
			fmt.Fprintf(r.out, "stress: stopping PostgreSQL: %v\n", err)
		}
	}
}

// errNoCluster is returned by a restart-db fault against an external database.
var errNoCluster = errors.New("skipped: the database is external (restart-db needs the throwaway PostgreSQL)")
