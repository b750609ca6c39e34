package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/bridge"
	"github.com/snapcopier/copier/broker/fix"
	"github.com/snapcopier/copier/broker/fix/fixwire"
	"github.com/snapcopier/copier/broker/sim"
	"github.com/snapcopier/copier/internal/copytrace"
	"github.com/snapcopier/copier/internal/sdnotify"
	"github.com/snapcopier/copier/leasekeeper"
	"github.com/snapcopier/copier/store"
)

// runSynopsis is the help text of the command.
const runSynopsis = `Required: --database-url, --platform and --broker.

Runs one copier node: it claims up to --capacity follower accounts of --platform, copies
their masters' trades through the broker, and releases its leases on SIGTERM or SIGINT.
Any number of nodes may run with the same flags; a crashed node's accounts move to the
others within one lease.

--broker is "sim" (an in-process simulated trade server that provisions unknown accounts,
for trying things out), "bridge://HOST:PORT" (a bridge server, e.g. 'copierd sim'; its
token comes from --bridge-token) or "fix://HOST:PORT" / "fix+tls://HOST:PORT" (a FIX 4.4
venue, e.g. a cTrader broker's TRADE endpoint or 'copierd sim --fix'; each account logs on
with its login and password and the account's FIX session settings (SenderCompID: else the
server field, else the login), and with --fix-token in RawData (96) where the venue wants
one ('copierd sim --token');
?target-comp-id=, ?target-sub-id= and ?sender-sub-id= set the other header ids;
?poll-positions=1s makes master feeds poll positions, for venues that do not report an
account's trades made outside the session; ?dialect=fix44 speaks standard FIX 4.4 only to
accounts that name no dialect (default ctrader), with the venue's symbols from
?symbols=FILE (a JSON array of {"name", "id", "contract_size", "digits", "min_lot",
"lot_step", "max_lot"}) for accounts without their own list or their platform's;
?position-mode=netting|hedging is the mode of the venue accounts that name none
(default netting; fix44 serves netting only); see broker/fix/FIX.md).

Configuration errors are reported before anything is touched (exit 2). A database or
bridge that cannot be reached at start is retried with backoff until it can, or until
the process is signalled. With --http, GET /healthz, /readyz (200 when the node holds a
trusted lease), /metrics (Prometheus) and / (a status page) are served.`

// runFlags are the flags of copierd run.
type runFlags struct {
	dbURL, platform, broker, bridgeToken, nodeID string
	fixToken                                     string
	capacity                                     int
	lease, fence, interval, clockSkew            time.Duration
	reconcileEvery, orderTimeout, equityEvery    time.Duration
	statusEvery                                  time.Duration
	symbolsMaxAge, ticketHistory                 time.Duration
	shutdownTimeout                              time.Duration
	httpAddr, logFormat, logLevel                string
	httpAddrFile, traceCopies                    string
	httpMaxConns                                 int
	trustedProxies                               string
	migrate, noListen                            bool
	maxHandOffs                                  int
	gcPercent                                    int
}

// runRun is the run subcommand.
func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("run", runSynopsis, stderr)
	var f runFlags
	fs.StringVar(&f.dbURL, "database-url", "", "PostgreSQL URL, postgres://user:password@host:port/dbname (required)")
	fs.StringVar(&f.platform, "platform", "", "platform of the followers this node claims, e.g. mt5 or sim (required)")
	fs.StringVar(&f.broker, "broker", "", `trade server: "sim" (in-process simulator), "bridge://HOST:PORT" or "fix://HOST:PORT" / "fix+tls://HOST:PORT" (required)`)
	fs.StringVar(&f.bridgeToken, "bridge-token", "", "shared secret of the bridge server (never logged)")
	fs.StringVar(&f.fixToken, "fix-token", "", "shared secret a fix:// venue requires in every Logon's RawData (96), e.g. the --token of 'copierd sim --fix' (never logged; empty: none sent)")
	fs.StringVar(&f.nodeID, "node-id", "", "this node's name in trading_accounts.node_id (default <platform>-<hostname>)")
	fs.IntVar(&f.capacity, "capacity", 1000, "most follower accounts this node holds (0 claims none)")
	fs.DurationVar(&f.lease, "lease", leasekeeper.DefaultLease, "lease length: lease_until = now() + lease on every renewal")
	fs.DurationVar(&f.fence, "fence", leasekeeper.DefaultFence, "stop sending orders this long before a lease could end (< lease)")
	fs.DurationVar(&f.interval, "interval", leasekeeper.DefaultInterval, "time between lease cycles (< lease − fence)")
	fs.DurationVar(&f.clockSkew, "clock-skew", leasekeeper.DefaultClockSkew, "most this node's clock and the trade server's may disagree; an order's deadline is checked by the receiver (fence > skew + drift)")
	fs.DurationVar(&f.reconcileEvery, "reconcile-every", 5*time.Minute, "reconcile every account this often to repair drift (negative: never)")
	fs.DurationVar(&f.equityEvery, "equity-every", 5*time.Second, "read the equity of followers with a stop-out limit this often")
	fs.DurationVar(&f.statusEvery, "status-every", 5*time.Second, "write a follower's status row and positions snapshot at most this often while only its figures change (balance, equity, last copy, positions); a new phase or error goes at once")
	fs.DurationVar(&f.symbolsMaxAge, "symbols-max-age", 10*time.Minute, "symbol specifications read from a trade server are reused up to this long: a master's by every reconcile, a follower's by its periodic repairs (any other reconcile reads them again)")
	fs.DurationVar(&f.ticketHistory, "ticket-history", 30*24*time.Hour, "delete closed ticket-map rows (which follower position copied which master position) this long after they closed (0: keep them forever)")
	fs.DurationVar(&f.orderTimeout, "order-timeout", 10*time.Second, "deadline of one broker call")
	fs.DurationVar(&f.shutdownTimeout, "shutdown-timeout", leasekeeper.DefaultShutdownTimeout, "how long a clean shutdown may take (systemd's TimeoutStopSec and Kubernetes' terminationGracePeriodSeconds must exceed it)")
	fs.IntVar(&f.maxHandOffs, "max-handoffs", 500, "most accounts handed back per lease cycle when this node holds more than its fair share of the platform (negative: no fair share; claim up to --capacity and keep it)")
	fs.BoolVar(&f.noListen, "no-listen", false, "do not LISTEN for other nodes' lease releases (behind a pooler in transaction mode): released accounts are then claimed at the interval's pace")
	fs.BoolVar(&f.migrate, "migrate", true, "apply the database migrations at start (safe with many nodes); false only checks the connection")
	fs.StringVar(&f.httpAddr, "http", "", "serve /healthz, /readyz, /metrics and a status page on HOST:PORT (empty: off)")
	fs.StringVar(&f.httpAddrFile, "http-addr-file", "", "once --http listens, write the address it listens on to this file (for supervisors and tests that pass port 0)")
	fs.StringVar(&f.traceCopies, "trace-copies", "", "record every order's stages (master event, feed, mailbox, reconcile queue, broker slot, wire, reply) to this file as they come; it is whole once the node stops (load tests; off by default)")
	fs.IntVar(&f.httpMaxConns, "http-max-conns", 0, "most HTTP connections open at once; a newcomer displaces the oldest without a request in progress, else the oldest anonymous one with a request in progress, else waits (0: a quarter of the file descriptor limit, at most 256)")
	fs.StringVar(&f.trustedProxies, "trusted-proxies", "", "comma-separated addresses or CIDR networks of TLS-terminating reverse proxies whose X-Forwarded-Proto (Secure session cookies) and X-Forwarded-For (login throttling) are believed")
	addGCPercentFlag(fs, &f.gcPercent)
	fs.StringVar(&f.logFormat, "log-format", "json", "log format: json or console")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: trace, debug, info, warn or error")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	usageErr := func(err error) int {
		fmt.Fprintf(stderr, "copierd run: %s\n", oneLine(err))
		return exitUsage
	}

	// Validate everything before touching the database, the broker or the network.
	if f.dbURL == "" {
		return usageErr(errors.New("--database-url (or COPIER_DATABASE_URL) is required"))
	}
	if f.platform == "" {
		return usageErr(errors.New("--platform (or COPIER_PLATFORM) is required"))
	}
	if err := checkName("--platform", f.platform, 64); err != nil {
		return usageErr(err)
	}
	if f.nodeID != "" {
		if err := checkName("--node-id", f.nodeID, 128); err != nil {
			return usageErr(err)
		}
	}
	if f.capacity < 0 {
		return usageErr(fmt.Errorf("--capacity must be ≥ 0 (got %d)", f.capacity))
	}
	timing := leasekeeper.Config{Lease: f.lease, Fence: f.fence, Interval: f.interval, ClockSkew: f.clockSkew}
	if err := timing.Validate(); err != nil {
		return usageErr(err)
	}
	if f.orderTimeout <= 0 || f.shutdownTimeout <= 0 || f.equityEvery <= 0 || f.statusEvery <= 0 {
		return usageErr(errors.New("--order-timeout, --shutdown-timeout, --equity-every and --status-every must be positive"))
	}
	pgcfg, err := store.ParseConfig(f.dbURL, store.Options{ApplicationName: "copierd-run"})
	if err != nil {
		return usageErr(err)
	}
	bk, err := parseBrokerSpec(f.broker)
	if err != nil {
		return usageErr(err)
	}
	if f.fixToken != "" && bk.kind != brokerFIX {
		return usageErr(errors.New("--fix-token (or COPIER_FIX_TOKEN) is for a fix:// broker; a bridge's token is --bridge-token"))
	}
	if f.httpAddr != "" {
		if err := checkListenAddr("http", f.httpAddr); err != nil {
			return usageErr(err)
		}
	}
	if f.httpMaxConns < 0 {
		return usageErr(fmt.Errorf("--http-max-conns must be ≥ 0 (got %d)", f.httpMaxConns))
	}
	trusted, err := parseTrustedProxies(f.trustedProxies)
	if err != nil {
		return usageErr(err)
	}
	gcPercent, gcFrom, err := applyGCPercent(fs, f.gcPercent)
	if err != nil {
		return usageErr(err)
	}
	log, err := newLogger(stderr, f.logFormat, f.logLevel)
	if err != nil {
		return usageErr(err)
	}
	cenv, err := readConsoleEnv()
	if err != nil {
		return usageErr(err)
	}
	cenv.trusted = trusted
	consoleOn := false
	if f.httpAddr != "" {
		var warning string
		if consoleOn, warning, err = checkConsole(f.httpAddr, cenv.options(nil, nil, nil, log)); err != nil {
			return usageErr(err)
		}
		if warning != "" {
			log.Warn().Msg(warning)
		}
	}
	cfg := actors.Config{
		NodeID: f.nodeID, Platform: f.platform, Capacity: f.capacity, Lease: timing,
		ReconcileEvery: f.reconcileEvery, OrderTimeout: f.orderTimeout, NoListen: f.noListen, EquityEvery: f.equityEvery, StatusEvery: f.statusEvery, SymbolsMaxAge: f.symbolsMaxAge, MaxHandOffs: f.maxHandOffs,
		TicketHistory: f.ticketHistory,
	}
	if f.ticketHistory == 0 {
		cfg.TicketHistory = actors.KeepTicketHistory
	}
	if err := cfg.Validate(); err != nil {
		return usageErr(err)
	}
	nodeLog := log // the node names itself in its lines (actors.Start): not twice
	log = log.With().Str("node", cfg.NodeID).Logger()
	// Under systemd (Type=notify): READY after the first successful lease cycle, the
	// watchdog fed by successful cycles only.
	notifier, err := sdnotify.Open(sdnotify.FromOS())
	if err == nil {
		err = checkWatchdog(notifier.Watchdog(), timing)
	}
	if err != nil {
		return usageErr(err)
	}
	defer notifier.Close()
	sd := &systemdReporter{n: notifier, log: log}
	log.Info().Str("platform", cfg.Platform).Int("capacity", cfg.Capacity).Str("broker", bk.String()).
		Str("db_host", pgcfg.ConnConfig.Host).Uint16("db_port", pgcfg.ConnConfig.Port).Str("db_name", pgcfg.ConnConfig.Database).
		Str("gc_percent", gcPercent).Str("gc_percent_from", string(gcFrom)).
		Msg("starting")

	// The HTTP endpoint comes up first, so /healthz answers while the node waits for its
	// dependencies (and /readyz says why it is not ready).
	var current atomic.Pointer[actors.Node]
	web := &statusHTTP{title: "copierd " + cfg.NodeID, nodes: func() []*actors.Node {
		if n := current.Load(); n != nil {
			return []*actors.Node{n}
		}
		return nil
	}}
	httpCtx, stopHTTP := context.WithCancel(context.Background())
	httpDone := make(chan struct{})
	close(httpDone)
	if f.httpAddr != "" {
		l, err := net.Listen("tcp", f.httpAddr)
		if err != nil {
			stopHTTP()
			fmt.Fprintf(stderr, "copierd run: %s\n", oneLine(err))
			return exitFailure
		}
		log.Info().Str("addr", l.Addr().String()).Msg("http listening")
		if f.httpAddrFile != "" {
			if err := writeFileAtomic(f.httpAddrFile, []byte(l.Addr().String()+"\n")); err != nil {
				stopHTTP()
				_ = l.Close()
				fmt.Fprintf(stderr, "copierd run: --http-addr-file: %s\n", oneLine(err))
				return exitFailure
			}
		}
		httpDone = make(chan struct{})
		go func() {
			defer close(httpDone)
			serveHTTP(httpCtx, l, web.handler(), f.httpMaxConns, log)
		}()
	}
	defer func() {
		stopHTTP()
		<-httpDone
	}()

	pool, err := store.OpenConfig(ctx, pgcfg)
	if err != nil {
		fmt.Fprintf(stderr, "copierd run: %s\n", oneLine(err))
		return exitFailure
	}
	defer pool.Close()
	web.pool.Store(pool)
	// The lease cycle has a pool of its own with a connection kept open, so that console,
	// status and account traffic cannot take every connection from it.
	leaseCfg, err := store.ParseConfig(f.dbURL, store.Options{ApplicationName: "copierd-lease", MaxConns: 2})
	if err != nil {
		return usageErr(err)
	}
	leaseCfg.MinConns = 1
	leasePool, err := store.OpenConfig(ctx, leaseCfg)
	if err != nil {
		fmt.Fprintf(stderr, "copierd run: %s\n", oneLine(err))
		return exitFailure
	}
	defer leasePool.Close()
	sd.send("STATUS=waiting for the database")
	if err := waitForDatabase(ctx, log, pool, f.migrate); err != nil {
		if ctx.Err() != nil {
			log.Info().Msg("signalled before the database was reachable; exiting")
			return exitOK
		}
		fmt.Fprintf(stderr, "copierd run: %s\n", oneLine(err))
		if errors.Is(err, store.ErrMagicClash) {
			return exitUsage
		}
		return exitFailure
	}

	var b broker.Broker
	switch bk.kind {
	case brokerSim:
		b = sim.New(sim.Config{Seed: time.Now().UnixNano(), AutoProvision: true})
		log.Warn().Msg("using the in-process simulated trade server: no real orders are sent")
	case brokerBridge:
		c, err := dialBridge(ctx, log, bk.addr, f.bridgeToken)
		if err != nil {
			if ctx.Err() != nil {
				log.Info().Msg("signalled before the bridge was reachable; exiting")
				return exitOK
			}
			fmt.Fprintf(stderr, "copierd run: %s\n", oneLine(err))
			return exitFailure
		}
		defer c.Close()
		web.addCheck("bridge", c.Connected)
		b = c
	case brokerFIX:
		fcfg := bk.fixConfig(log)
		fcfg.Token = f.fixToken
		fcfg.Book = storeBook{pool: pool, node: cfg.NodeID, platform: cfg.Platform}
		fb, err := fix.New(fcfg)
		if err != nil {
			return usageErr(err)
		}
		// No node-level connection: ready while a session is logged on (or none failed).
		web.addCheck("FIX", fb.Connected)
		b = fb
	}

	deps := actors.Deps{Pool: pool, LeasePool: leasePool, Broker: b, Logger: nodeLog, Credentials: cenv.credentials(), Observe: sd.observe}
	if f.traceCopies != "" {
		rc, err := copytrace.Create(f.traceCopies)
		if err != nil {
			fmt.Fprintf(stderr, "copierd run: --trace-copies: %s\n", oneLine(err))
			return exitFailure
		}
		deps.TraceCopies = rc
		defer func() {
			if err := rc.Close(); err != nil {
				log.Error().Err(err).Msg("copy trace not written whole")
			}
		}()
	}
	node, err := actors.Start(ctx, cfg, deps)
	if err != nil {
		fmt.Fprintf(stderr, "copierd run: %s\n", oneLine(err))
		return exitFailure
	}
	current.Store(node)
	if consoleOn {
		ctl, _ := b.(broker.Controller)
		opts := cenv.options(pool, node, ctl, log)
		// A drain from the console can be undone: the node starts again with the same
		// configuration and becomes the one /metrics reports and shutdown stops.
		opts.Restart = func(context.Context) (*actors.Node, error) {
			n, err := actors.Start(ctx, cfg, deps)
			if err == nil {
				current.Store(n)
			}
			return n, err
		}
		if err := mountConsole(web, opts); err != nil {
			log.Error().Err(err).Msg("console not started")
		}
	}

	<-ctx.Done()
	log.Info().Msg("signalled; stopping (finishing in-flight orders, releasing leases)")
	web.stopping.Store(true)
	sd.send("STOPPING=1", "STATUS=stopping: finishing in-flight orders, releasing leases")
	sctx, cancel := context.WithTimeout(context.Background(), f.shutdownTimeout)
	defer cancel()
	if err := current.Load().Stop(sctx); err != nil {
		log.Error().Err(err).Msg("clean shutdown failed; leases will expire by themselves")
		return exitFailure
	}
	log.Info().Msg("stopped")
	return exitOK
}

// parseTrustedProxies parses --trusted-proxies: comma-separated IP addresses or CIDR
// networks.
func parseTrustedProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if p, err := netip.ParsePrefix(part); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(part)
		if err != nil {
			return nil, fmt.Errorf("--trusted-proxies: %q is neither an IP address nor a CIDR network (e.g. 10.0.0.5 or 10.0.0.0/8)", part)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

// brokerKind is what --broker selects.
type brokerKind int8

// Broker kinds.
const (
	brokerSim    brokerKind = iota + 1 // in-process simulator
	brokerBridge                       // a bridge server over TCP
	brokerFIX                          // a FIX 4.4 venue
)

// brokerSpec is a parsed --broker value.
type brokerSpec struct {
	kind brokerKind
	addr string // HOST:PORT for bridge and FIX
	tls  bool   // fix+tls
	// FIX header ids from the query (empty: broker/fix's defaults).
	targetCompID, targetSubID, senderSubID string
	// pollPositions > 0: master feeds poll positions at this interval (?poll-positions=).
	pollPositions time.Duration
	// dialect is the node's FIX dialect (?dialect=; empty: broker/fix's default) and
	// symbols the venue's symbol list read from ?symbols=FILE.
	dialect fixwire.Dialect
	symbols []fix.Symbol
	// positionMode is the venue accounts' position mode (?position-mode=; zero: netting).
	positionMode broker.AccountMode
}

// String describes the broker for logs (it never holds a secret).
func (b brokerSpec) String() string {
	switch b.kind {
	case brokerSim:
		return "sim"
	case brokerFIX:
		if b.tls {
			return "fix+tls://" + b.addr
		}
		return "fix://" + b.addr
	}
	return "bridge://" + b.addr
}

// fixConfig is the FIX broker configuration of a fix:// spec.
func (b brokerSpec) fixConfig(log zerolog.Logger) fix.Config {
	return fix.Config{Addr: b.addr, TLS: b.tls, TargetCompID: b.targetCompID, TargetSubID: b.targetSubID,
		SenderSubID: b.senderSubID, PollPositions: b.pollPositions, Dialect: b.dialect, Symbols: b.symbols, PositionMode: b.positionMode, Log: log}
}

// parseBrokerSpec parses --broker: "sim" or "bridge://HOST:PORT".
func parseBrokerSpec(s string) (brokerSpec, error) {
	if s == "" {
		return brokerSpec{}, errors.New(`--broker (or COPIER_BROKER) is required: "sim", "bridge://HOST:PORT" or "fix://HOST:PORT"`)
	}
	if s == "sim" {
		return brokerSpec{kind: brokerSim}, nil
	}
	bad := func(why string) error {
		return fmt.Errorf(`--broker %q: %s (want "sim", "bridge://HOST:PORT" or "fix://HOST:PORT")`, redactURL(s), why)
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" {
		return brokerSpec{}, bad("not a broker address")
	}
	spec := brokerSpec{kind: brokerBridge}
	switch u.Scheme {
	case "bridge":
	case "fix", "fix+tls":
		spec.kind, spec.tls = brokerFIX, u.Scheme == "fix+tls"
	default:
		return brokerSpec{}, bad("unknown scheme " + strconv.Quote(u.Scheme))
	}
	if u.User != nil {
		return brokerSpec{}, bad("do not put credentials in the address; use --bridge-token or COPIER_BRIDGE_TOKEN (FIX: the account's password)")
	}
	if (u.Path != "" && u.Path != "/") || u.Fragment != "" || u.Opaque != "" || (u.RawQuery != "" && spec.kind != brokerFIX) {
		return brokerSpec{}, bad("unexpected path or query")
	}
	if spec.kind == brokerFIX {
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			return brokerSpec{}, bad("bad query")
		}
		for k, v := range q {
			switch k {
			case "target-comp-id":
				spec.targetCompID = v[0]
			case "target-sub-id":
				spec.targetSubID = v[0]
			case "sender-sub-id":
				spec.senderSubID = v[0]
			case "poll-positions":
				d, err := time.ParseDuration(v[0])
				if err != nil || d < 100*time.Millisecond {
					return brokerSpec{}, bad("poll-positions must be a duration of at least 100ms, e.g. 1s")
				}
				spec.pollPositions = d
			case "dialect":
				d, err := fixwire.ParseDialect(v[0])
				if err != nil {
					return brokerSpec{}, bad(err.Error())
				}
				spec.dialect = d
			case "position-mode":
				if spec.positionMode, err = fix.ParsePositionMode(v[0]); err != nil || v[0] == "" {
					return brokerSpec{}, bad("position-mode must be netting or hedging")
				}
			case "symbols":
				if spec.symbols, err = readSymbols(v[0]); err != nil {
					return brokerSpec{}, bad(err.Error())
				}
			default:
				return brokerSpec{}, bad("unknown parameter " + strconv.Quote(k) + " (want target-comp-id, target-sub-id, sender-sub-id, poll-positions, dialect, position-mode or symbols)")
			}
		}
	}
	if spec.positionMode == broker.Hedging && !spec.dialect.Or(fixwire.DefaultDialect).Features().PositionIDs {
		return brokerSpec{}, bad("position-mode=hedging cannot be served by the " + string(spec.dialect) + " dialect: a close is an opposite order, which nets (use a netting account, or a dialect with position ids)")
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || host == "" {
		return brokerSpec{}, bad("HOST:PORT is required")
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return brokerSpec{}, bad("port must be a number from 1 to 65535")
	}
	spec.addr = u.Host
	return spec, nil
}

// readSymbols reads a FIX venue's symbol list file (broker/fix.ParseSymbols).
func readSymbols(path string) ([]fix.Symbol, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("symbols: %w", err)
	}
	defer func() { _ = f.Close() }()
	list, err := fix.ParseSymbols(f)
	if err != nil {
		return nil, fmt.Errorf("symbols file %s: %w", path, err)
	}
	return list, nil
}

// redactURL hides the user information of a URL-like string.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	return u.Redacted()
}

// checkName checks a platform or node name: 1 to maxLen characters from letters, digits,
// '.', '_' and '-', starting with a letter or digit.
func checkName(flag, s string, maxLen int) error {
	if len(s) > maxLen {
		return fmt.Errorf("%s %q: longer than %d characters", flag, s, maxLen)
	}
	for i, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || (i > 0 && (r == '.' || r == '_' || r == '-'))
		if !ok {
			return fmt.Errorf("%s %q: use letters, digits, '.', '_' and '-' only, starting with a letter or digit", flag, s)
		}
	}
	return nil
}

// newLogger returns a zerolog logger writing JSON (format "json") or human-readable lines
// (format "console") to w at the given level.
func newLogger(w io.Writer, format, level string) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(strings.ToLower(level))
	if err != nil || level == "" || lvl == zerolog.NoLevel {
		return zerolog.Nop(), fmt.Errorf("--log-level %q: want trace, debug, info, warn, error or disabled", level)
	}
	var out io.Writer
	switch format {
	case "json":
		out = w
	case "console":
		out = zerolog.ConsoleWriter{Out: w, TimeFormat: "15:04:05.000", NoColor: !isTerminal(w)}
	default:
		return zerolog.Nop(), fmt.Errorf("--log-format %q: want json or console", format)
	}
	return zerolog.New(out).Level(lvl).Hook(timestampHook{}), nil
}

// timestampHook stamps every log line with the time in RFC 3339 with nanoseconds (UTC),
// without changing zerolog's process-wide TimeFieldFormat.
type timestampHook struct{}

// Run implements zerolog.Hook.
func (timestampHook) Run(e *zerolog.Event, _ zerolog.Level, _ string) {
	e.Str(zerolog.TimestampFieldName, time.Now().UTC().Format(time.RFC3339Nano))
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// backoff is a jittered exponential backoff between min and max.
type backoff struct {
	min, max, cur time.Duration
}

// next returns the next wait: doubled each time up to max, with ±20 % jitter.
func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur = min(2*b.cur, b.max)
	}
	jitter := time.Duration(rand.Int64N(int64(b.cur)/5+1)) * 2
	return b.cur - b.cur/5 + jitter
}

// retry runs attempt until it succeeds, stop says an error is final, or ctx ends; it
// logs every failed attempt and waits with backoff in between. It returns ctx's error
// when ctx ended.
func retry(ctx context.Context, log zerolog.Logger, what string, attempt func(context.Context) error, stop func(error) bool) error {
	b := backoff{min: 250 * time.Millisecond, max: 15 * time.Second}
	for n := 1; ; n++ {
		err := attempt(ctx)
		if err == nil {
			if n > 1 {
				log.Info().Int("attempt", n).Msg(what + ": reachable")
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if stop != nil && stop(err) {
			return err
		}
		wait := b.next()
		log.Warn().Int("attempt", n).Dur("retry_in", wait).Str("error", oneLine(err)).Msg(what + ": not reachable, retrying")
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// waitForDatabase applies the migrations (or, without migrate, pings) until it succeeds
// or ctx ends, retrying with backoff and logging every attempt.
func waitForDatabase(ctx context.Context, log zerolog.Logger, pool *pgxpool.Pool, migrate bool) error {
	return retry(ctx, log, "database", func(ctx context.Context) error {
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if !migrate {
			return pool.Ping(actx)
		}
		applied, err := store.Migrate(actx, pool)
		if err == nil && len(applied) > 0 {
			log.Info().Ints("versions", applied).Msg("applied migrations")
		}
		return err
	}, func(err error) bool { return errors.Is(err, store.ErrMagicClash) }) // the data must be fixed first
}

// dialBridge connects to a bridge server, retrying with backoff until it answers or ctx
// ends. A refused token is final.
func dialBridge(ctx context.Context, log zerolog.Logger, addr, token string) (*bridge.Client, error) {
	var c *bridge.Client
	err := retry(ctx, log, "bridge "+addr, func(ctx context.Context) error {
		var err error
		c, err = bridge.Dial(ctx, addr, bridge.ClientOptions{Token: token, Name: "copierd", Logger: log})
		return err
	}, func(err error) bool { return errors.Is(err, broker.ErrPermanent) })
	if err != nil {
		return nil, err
	}
	return c, nil
}

// writeFileAtomic writes data to path through a temporary file and a rename, so a reader
// never sees a partial file.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
