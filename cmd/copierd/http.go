package main

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/internal/connauth"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/reconcile/follower"
)

// statusHTTP serves the health, readiness, metrics and status endpoints of one or more
// in-process nodes:
//
//	GET /healthz  200 while the process is up
//	GET /readyz   200 when every node holds a trusted lease (node.Ready) and every check
//	              holds (a node's bridge is connected or a FIX session logged on, the
//	              demo's FIX front accepts connections), else 503
//	GET /metrics  Prometheus text format, one series per node (label node)
//	GET /status   a plain HTML status page (refreshes itself every few seconds)
//	/             the operator console once mounted (see consolemount.go), else the status page
type statusHTTP struct {
	// console, once stored, serves every path not listed above.
	console atomic.Pointer[http.Handler]
	// nodes returns the running nodes; it may return none (still starting).
	nodes func() []*actors.Node
	// summary, when set, adds one line of context to the status page (the demo's progress).
	summary func() string
	// title heads the status page.
	title string
	// pool, once stored, is the database /metrics counts unowned followers in.
	pool atomic.Pointer[pgxpool.Pool]
	// stopping makes /readyz answer 503 while the process shuts down.
	stopping atomic.Bool
	// checks are further conditions of readiness (the demo's FIX front accepting, a
	// node's bridge connected or FIX session logged on): /readyz answers 503 with the
	// first one that fails.
	checksMu sync.Mutex
	checks   []readyCheck
}

// addCheck adds a condition of readiness; safe while the server runs.
func (s *statusHTTP) addCheck(name string, check func() error) {
	s.checksMu.Lock()
	defer s.checksMu.Unlock()
	s.checks = append(s.checks, readyCheck{name, check})
}

// readyCheck is one condition of readiness: nil while it holds.
type readyCheck struct {
	name  string
	check func() error
}

// handler returns the HTTP handler of s.
func (s *statusHTTP) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if ok, why := s.ready(); !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "not ready: "+why+"\n")
			return
		}
		_, _ = io.WriteString(w, "ready\n")
	})
	mux.Handle("GET /metrics", metricsHandler(s.nodes, s.pool.Load))
	mux.HandleFunc("GET /status", s.statusPage)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if c := s.console.Load(); c != nil {
			(*c).ServeHTTP(w, r)
			return
		}
		if r.Method == http.MethodGet && r.URL.Path == "/" {
			s.statusPage(w, r)
			return
		}
		http.NotFound(w, r)
	})
	return baseHeaders(closeAnonymous(mux))
}

// closeAnonymous tells a client on an anonymous connection that sends no credentials (a
// probe, a scrape) that the connection closes after the answer, as limitListener closes
// it: the client then does not try to reuse it. A request with credentials may
// authenticate its connection, which then stays open.
func closeAnonymous(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m := connauth.Of(r.Context()); m != nil && !m.Authenticated() && r.Header.Get("Authorization") == "" && r.Header.Get("Cookie") == "" {
			w.Header().Set("Connection", "close")
		}
		next.ServeHTTP(w, r)
	})
}

// baseHeaders sets the security headers of every response of the process's HTTP port
// (health, readiness, metrics and the status page are public); the console, when
// mounted, sets its own stricter policy on top.
func baseHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		// The status page has one inline style sheet and nothing else.
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		if !strings.HasPrefix(r.URL.Path, "/static/") { // the console's assets may be cached
			h.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r)
	})
}

// ready reports whether every node is ready, and why not.
func (s *statusHTTP) ready() (bool, string) {
	if s.stopping.Load() {
		return false, "shutting down"
	}
	s.checksMu.Lock()
	checks := slices.Clone(s.checks)
	s.checksMu.Unlock()
	for _, c := range checks {
		if err := c.check(); err != nil {
			return false, c.name + ": " + oneLine(err)
		}
	}
	nodes := s.nodes()
	if len(nodes) == 0 {
		return false, "node not started (waiting for the database or the broker)"
	}
	for _, n := range nodes {
		if !n.Ready() {
			return false, "node " + n.Config().NodeID + " holds no trusted lease"
		}
	}
	return true, ""
}

// HTTP server limits. Health and metrics are public on any address, so anyone who reaches
// the port could otherwise hold connections until the process runs out of file
// descriptors, and then the lease cycle cannot reach the database.
const (
	// httpReadHeaderTimeout is the header timeout of a connection a request has
	// authenticated on; httpAnonHeaderTimeout that of every other, counted from accept
	// (such a connection serves one request; see limitListener): probes, scrapes and
	// browsers send their headers at once, slowloris clients are cut five times sooner.
	httpReadHeaderTimeout = 10 * time.Second
	httpAnonHeaderTimeout = 2 * time.Second
	httpReadTimeout       = 30 * time.Second // a whole request, body included (bodies are ≤ 1 MiB)
	httpWriteTimeout      = 30 * time.Second // a whole answer (a drain extends its own)
	httpIdleTimeout       = 30 * time.Second // a keep-alive connection without a request
	httpMaxHeaderBytes    = 64 << 10
	// httpMaxConnsCeiling bounds the default connection cap (see defaultHTTPMaxConns).
	httpMaxConnsCeiling = 256
)

// defaultHTTPMaxConns is the default cap of concurrent HTTP connections: a quarter of the
// process's file descriptor limit, at most httpMaxConnsCeiling, so that the database
// pools, the broker and the lease cycle always have descriptors left.
func defaultHTTPMaxConns() int {
	return max(4, min(httpMaxConnsCeiling, fileLimit()/4))
}

// serveHTTP serves h on l until ctx ends, then shuts the server down gracefully. It
// returns when the server has stopped. At most maxConns connections are open at once
// (0: defaultHTTPMaxConns), plus one being admitted; see limitListener for who waits.
func serveHTTP(ctx context.Context, l net.Listener, h http.Handler, maxConns int, log zerolog.Logger) {
	if maxConns <= 0 {
		maxConns = defaultHTTPMaxConns()
	}
	ll := newLimitListener(l, maxConns, httpAnonHeaderTimeout)
	runHTTP(ctx, newHTTPServer(h, ll, log), ll, log)
}

// newHTTPServer is the server of serveHTTP: its limits, its connection states reported
// to ll (which connections may be displaced, which are anonymous) and each connection's
// authentication mark in its requests' context (internal/connauth, set by the console).
func newHTTPServer(h http.Handler, ll *limitListener, log zerolog.Logger) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: httpReadHeaderTimeout, ReadTimeout: httpReadTimeout,
		WriteTimeout: httpWriteTimeout, IdleTimeout: httpIdleTimeout, MaxHeaderBytes: httpMaxHeaderBytes,
		ErrorLog: stdlog.New(logWriter{log}, "", 0), ConnState: ll.connState, ConnContext: connContext}
}

// runHTTP serves srv on ll until ctx ends, then shuts it down gracefully.
func runHTTP(ctx context.Context, srv *http.Server, ll *limitListener, log zerolog.Logger) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ll); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("http server failed")
		}
	}()
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	<-done
}

// logWriter turns the standard logger's lines (the HTTP server's accept errors and the
// like) into warnings of log.
type logWriter struct{ log zerolog.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.Warn().Msg(strings.TrimSpace(string(p)))
	return len(p), nil
}

// checkListenAddr validates a host:port listen address without binding it.
func checkListenAddr(flagName, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--%s %q: want HOST:PORT (e.g. 127.0.0.1:8080 or :8080)", flagName, addr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("--%s %q: port must be a number from 0 to 65535", flagName, addr)
	}
	return nil
}

// counterDef is one counter family read from actors.Metrics; label, when set, splits a
// family into several series (label name, then value per field).
type counterDef struct {
	name, help string
	label      string
	series     []counterSeries
}

// counterSeries is one series of a counter family.
type counterSeries struct {
	labelValue string
	read       func(*actors.Metrics) int64
}

// counterDefs lists the node's counters as Prometheus families.
func counterDefs() []counterDef {
	one := func(f func(*actors.Metrics) int64) []counterSeries { return []counterSeries{{read: f}} }
	return []counterDef{
		{name: "copier_orders_total", help: "Orders sent to the broker, by result class.", label: "result", series: []counterSeries{
			{"ok", func(m *actors.Metrics) int64 { return m.OrdersOK.Load() }},
			{"retryable", func(m *actors.Metrics) int64 { return m.OrdersRetryable.Load() }},
			{"unknown_outcome", func(m *actors.Metrics) int64 { return m.OrdersUnknown.Load() }},
			{"permanent", func(m *actors.Metrics) int64 { return m.OrdersPermanent.Load() }},
			{"fenced", func(m *actors.Metrics) int64 { return m.OrdersFenced.Load() }},
			{"expired", func(m *actors.Metrics) int64 { return m.OrdersExpired.Load() }},
			{"other", func(m *actors.Metrics) int64 { return m.OrdersOther.Load() }},
		}},
		{name: "copier_dropped_work_total", help: "Orders dropped because the lease gate was closed.",
			series: one(func(m *actors.Metrics) int64 { return m.DroppedWork.Load() })},
		{name: "copier_reconciles_total", help: "Reconciles started, by reason.", label: "reason", series: []counterSeries{
			{"gap", reconciles(follower.CauseGap)},
			{"start", reconciles(follower.CauseStart)},
			{"gate", reconciles(follower.CauseGate)},
			{"unknown_outcome", reconciles(follower.CauseUnknown)},
			{"periodic", reconciles(follower.CausePeriodic)},
			{"restart", reconciles(follower.CauseRestart, follower.CauseEpoch)},
			{"config", reconciles(follower.CauseConfig)},
			{"order_failed", reconciles(follower.CauseOrderFailed)},
			{"protection", reconciles(follower.CauseProtection)},
			{"stale_quote", reconciles(follower.CauseQuote)},
			{"chained", reconciles(follower.CauseAgain)},
		}},
		{name: "copier_skips_total", help: "Master positions a link did not copy, by reason (each position and reason once while it lasts).", label: "reason", series: skipSeries()},
		{name: "copier_stopouts_total", help: "Stop-outs: a follower's or a link's drawdown or daily loss limit breached.",
			series: one(func(m *actors.Metrics) int64 { return m.StopOuts.Load() })},
		{name: "copier_stale_writes_refused_total", help: "Fenced writes the database refused (the account had moved on).",
			series: one(func(m *actors.Metrics) int64 { return m.StaleWritesRefused.Load() })},
		{name: "copier_account_crashes_total", help: "AccountActor crashes (each is restarted with backoff).",
			series: one(func(m *actors.Metrics) int64 { return m.Crashes.Load() })},
		{name: "copier_lease_cycles_total", help: "Lease cycles run.",
			series: one(func(m *actors.Metrics) int64 { return m.Cycles.Load() })},
		{name: "copier_lease_cycle_failures_total", help: "Lease cycles that failed (nothing changed; trust runs out by itself).",
			series: one(func(m *actors.Metrics) int64 { return m.CycleFailures.Load() })},
		{name: "copier_lease_claims_total", help: "Follower accounts claimed.",
			series: one(func(m *actors.Metrics) int64 { return m.Claims.Load() })},
		{name: "copier_lease_renewals_total", help: "Lease renewals.",
			series: one(func(m *actors.Metrics) int64 { return m.Renewals.Load() })},
		{name: "copier_lease_releases_total", help: "Leases released (switched off or shutdown).",
			series: one(func(m *actors.Metrics) int64 { return m.Releases.Load() })},
		{name: "copier_lease_lost_total", help: "Accounts lost (no longer in a cycle's result).",
			series: one(func(m *actors.Metrics) int64 { return m.Lost.Load() })},
		{name: "copier_lease_handoffs_total", help: "Leases handed back to balance the platform (the node held more than its fair share).",
			series: one(func(m *actors.Metrics) int64 { return m.HandOffs.Load() })},
		{name: "copier_ticket_rows_pruned_total", help: "Closed ticket-map rows deleted past --ticket-history.",
			series: one(func(m *actors.Metrics) int64 { return m.TicketRowsPruned.Load() })},
		{name: "copier_lease_wakeups_total", help: "Release notifications from other nodes of the platform.",
			series: one(func(m *actors.Metrics) int64 { return m.Wakes.Load() })},
		{name: "copier_lease_early_cycles_total", help: "Lease cycles run before their interval, by trigger.", label: "trigger", series: []counterSeries{
			{"wake", func(m *actors.Metrics) int64 { return m.CyclesWoken.Load() }},
			{"lease_end", func(m *actors.Metrics) int64 { return m.CyclesAtLeaseEnd.Load() }},
		}},
	}
}

// allPhases returns the account phases reported by copier_accounts.
func allPhases() []actors.AccountPhase {
	return []actors.AccountPhase{actors.PhaseStarting, actors.PhaseReconciling, actors.PhaseCopying, actors.PhaseDirty, actors.PhaseFailed}
}

// boolFloat is 1 for true and 0 for false.
func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// statusPageTmpl is the plain HTML status page; it refreshes itself every 2 s.
var statusPageTmpl = template.Must(template.New("status").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="2">
<title>{{.Title}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse}
th,td{border:1px solid #ccc;padding:.3em .7em;text-align:right}
th{background:#f3f3f3}
td.l,th.l{text-align:left}
.open{color:#070}.closed{color:#b00}
</style></head><body>
<h1>{{.Title}}</h1>
<p>{{.Now}}{{if .Summary}} — {{.Summary}}{{end}}</p>
{{if .Nodes}}
<table>
<tr><th class="l">node</th><th class="l">platform</th><th>owned</th><th>capacity</th><th class="l">gate</th><th>trust left</th><th class="l">last cycle</th>
<th>copying</th><th>reconciling</th><th>dirty</th><th>failed</th><th>orders ok</th><th>orders failed</th></tr>
{{range .Nodes}}<tr><td class="l">{{.ID}}</td><td class="l">{{.Platform}}</td><td>{{.Owned}}</td><td>{{.Capacity}}</td>
<td class="l {{if .GateOpen}}open">open{{else}}closed">closed{{end}}</td><td>{{.Remaining}}</td><td class="l">{{.LastCycle}}</td>
<td>{{.Copying}}</td><td>{{.Reconciling}}</td><td>{{.Dirty}}</td><td>{{.Failed}}</td><td>{{.OrdersOK}}</td><td>{{.OrdersFailed}}</td></tr>
{{end}}</table>
{{else}}<p>No node is running yet (waiting for the database or the broker).</p>{{end}}
<p><a href="/metrics">/metrics</a> · <a href="/healthz">/healthz</a> · <a href="/readyz">/readyz</a></p>
</body></html>
`))

// statusRow is one node on the status page.
type statusRow struct {
	ID, Platform                        string
	Owned, Capacity                     int
	GateOpen                            bool
	Remaining, LastCycle                string
	Copying, Reconciling, Dirty, Failed int
	OrdersOK, OrdersFailed              int64
}

// statusPage renders the HTML status page.
func (s *statusHTTP) statusPage(w http.ResponseWriter, _ *http.Request) {
	data := struct {
		Title, Now, Summary string
		Nodes               []statusRow
	}{Title: s.title, Now: time.Now().Format("2006-01-02 15:04:05 MST")}
	if s.summary != nil {
		data.Summary = s.summary()
	}
	for _, n := range s.nodes() {
		data.Nodes = append(data.Nodes, nodeRow(n))
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := statusPageTmpl.Execute(w, data); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// nodeRow summarises one node for the status page.
func nodeRow(n *actors.Node) statusRow {
	cfg, snap, met := n.Config(), n.Summary(), n.Metrics()
	r := statusRow{ID: cfg.NodeID, Platform: cfg.Platform, Owned: snap.Accounts, Capacity: cfg.Capacity,
		GateOpen: snap.GateOpen, Remaining: snap.Remaining.Round(100 * time.Millisecond).String(),
		OrdersOK: met.OrdersOK.Load(), OrdersFailed: ordersFailed(met)}
	switch c := snap.LastCycle; {
	case c.Started.IsZero():
		r.LastCycle = "none yet"
	case c.Err != nil:
		r.LastCycle = "failed: " + oneLine(c.Err)
	default:
		r.LastCycle = fmt.Sprintf("ok in %v (claimed %d, renewed %d, released %d, lost %d)",
			c.Duration.Round(time.Millisecond), c.Claimed, c.Renewed, c.Released, c.Lost)
	}
	r.Copying = snap.ByPhase[actors.PhaseCopying]
	r.Reconciling = snap.ByPhase[actors.PhaseStarting] + snap.ByPhase[actors.PhaseReconciling]
	r.Dirty = snap.ByPhase[actors.PhaseDirty]
	r.Failed = snap.ByPhase[actors.PhaseFailed]
	return r
}

// ordersFailed is the number of orders that did not succeed, whatever the class.
func ordersFailed(m *actors.Metrics) int64 {
	return m.OrdersRetryable.Load() + m.OrdersUnknown.Load() + m.OrdersPermanent.Load() + m.OrdersFenced.Load() + m.OrdersExpired.Load() + m.OrdersOther.Load()
}

// skipSeries is one series of copier_skips_total per skip reason the journal keeps (all
// but quote_stale, which the engine answers with a fresh quote at once).
func skipSeries() []counterSeries {
	var out []counterSeries
	for r := reconcile.SkipReason(1); r <= reconcile.SkipStopPassed; r++ {
		if r == reconcile.SkipQuoteStale {
			continue
		}
		out = append(out, counterSeries{r.String(), func(m *actors.Metrics) int64 { return m.Skips(r) }})
	}
	return out
}

// reconciles reads the reconciles of causes, for one series of copier_reconciles_total.
func reconciles(causes ...follower.Cause) func(*actors.Metrics) int64 {
	return func(m *actors.Metrics) int64 {
		var n int64
		for _, c := range causes {
			n += m.Reconciles(c)
		}
		return n
	}
}
