package stress

import (
	"context"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snapcopier/copier/broker/bridge"
	"github.com/snapcopier/copier/broker/sim"
	"github.com/snapcopier/copier/broker/sim/activity"
	"github.com/snapcopier/copier/broker/sim/fixfront"
	"github.com/snapcopier/copier/cmd/copierd/setup"
	"github.com/snapcopier/copier/store/pgcluster"
)

// Platform is the platform of the stress accounts (the nodes' --platform).
const Platform = "sim"

// account is one simulated account of the run.
type account struct {
	id    int64
	login string
}

// runner is one stress run: its options, the parts it started and what it measured.
type runner struct {
	o   Options
	out io.Writer

	logMu    sync.Mutex
	runLog   *os.File
	faultLog *os.File

	db         *setup.Database // cluster, dbURL, pgAddr and pool come from it
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

	statements bool            // pg_stat_statements measures the load (watchStatements)
	dbTime     *DatabaseTime   // ... what it measured
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
	r := &runner{o: opts, out: out, httpClient: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
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

func (r *runner) setPhase(p string) { r.phase.Store(&p) }

func (r *runner) getPhase() string {
	if p := r.phase.Load(); p != nil {
		return *p
	}
	return ""
}

// logf writes one timestamped line to run.log.
func (r *runner) logf(format string, args ...any) {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	fmt.Fprintf(r.runLog, "%s %s\n", time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// since returns seconds since the load started (negative before it did; 0 when it has
// not started).
func (r *runner) since(t time.Time) float64 {
	if ls := r.loadStart.Load(); ls != nil {
		return round3(t.Sub(*ls).Seconds())
	}
	return 0
}

func (r *runner) execute(ctx context.Context) (Report, error) {
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
	if r.statements {
		if err := r.resetStatements(ctx); err != nil {
			r.logf("pg_stat_statements: reset: %v (the database's time is not reported)", err)
			r.statements = false
		}
	}
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
	if r.statements && ctx.Err() == nil {
		var err error
		if r.dbTime, err = r.readStatements(ctx); err != nil {
			r.logf("pg_stat_statements: %v (the database's time is not reported)", err)
		}
	}
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
	rep.Database = r.dbTime
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
