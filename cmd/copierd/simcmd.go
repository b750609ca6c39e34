package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/bridge"
	"github.com/snapcopier/copier/broker/fix/fixwire"
	"github.com/snapcopier/copier/broker/sim"
	"github.com/snapcopier/copier/broker/sim/fixfront"
)

// simSynopsis is the help text of the command.
const simSynopsis = `Serves a simulated MetaTrader-like trade server (broker/sim) over the bridge protocol,
control API included (provisioning, master trades, order log, faults, options), until
signalled. Nodes reach it with 'copierd run --broker bridge://HOST:PORT --bridge-token T'
(the sim's --token T; without one the sim refuses to start unless --insecure); the demo
and stress tools drive it through the same connection. Fault rates are probabilities per
request in [0, 1]; a seeded random source decides, so a run repeats.

With --fix ADDR the same server is also a FIX 4.4 acceptor (broker/sim/fixfront) with
cTrader-style semantics: logon with the account's login (553) and password (554),
TargetCompID --fix-comp-id, and the --token in RawData (96) (nodes: 'copierd run --broker
fix://HOST:PORT --fix-token T'; refused logons are logged at most once a second). See
broker/fix/FIX.md.`

// runSim is the sim subcommand.
func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("sim", simSynopsis, stderr)
	listen := fs.String("listen", "127.0.0.1:7400", "TCP address to serve the bridge on (port 0 picks a free one)")
	seed := fs.Int64("seed", 1, "seed of every random decision (prices, faults, dropped events)")
	token := fs.String("token", "", "shared secret bridge clients must present, and FIX clients in every Logon's RawData (96) (required unless --insecure; never logged)")
	insecure := fs.Bool("insecure", false, "serve the bridge and the FIX acceptor without a token: anyone who reaches the ports is accepted")
	autoProvision := fs.Bool("auto-provision", true, "create unknown accounts on first connect (balance 10,000 USD, leverage 100, hedging)")
	triggerStops := fs.Bool("trigger-stops", false, "close positions whose SL or TP the price reaches")
	requote := fs.Float64("requote-rate", 0, "share of orders rejected with a requote (retryable)")
	timeout := fs.Float64("timeout-rate", 0, "share of orders that time out with an unknown outcome (executed or not)")
	disconnect := fs.Float64("disconnect-rate", 0, "share of requests on which the session drops (feeds restart with a new epoch)")
	dropEvent := fs.Float64("drop-event-rate", 0, "share of feed events not delivered (the next one shows a gap)")
	latency := fs.Duration("latency", 0, "latency added to every session request")
	enforce := fs.Bool("enforce-tokens", false, "reject orders whose fencing token is lower than the highest seen for the account")
	dedup := fs.Bool("dedup", false, "answer a repeated request id with its first result instead of executing it again")
	fixAddr := fs.String("fix", "", "also serve the simulator as a FIX 4.4 acceptor on this TCP address (empty: no FIX)")
	fixCompID := fs.String("fix-comp-id", fixfront.DefaultCompID, "the FIX acceptor's SenderCompID (clients' TargetCompID)")
	fixDialect := fs.String("fix-dialect", string(fixwire.DialectCTrader), `the FIX acceptor's dialect: "ctrader" (custom tags, SecurityList, positions, the fence) or "fix44" (strict: the stock FIX 4.4 dictionary, unknown tags refused, no SecurityList, RequestForPositions or CollateralInquiry, fills without position ids)`)
	logFormat := fs.String("log-format", "json", "log format: json or console")
	logLevel := fs.String("log-level", "info", "log level: trace, debug, info, warn or error")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	usageErr := func(err error) int {
		fmt.Fprintf(stderr, "copierd sim: %s\n", oneLine(err))
		return exitUsage
	}
	if err := checkListenAddr("listen", *listen); err != nil {
		return usageErr(err)
	}
	if *fixAddr != "" {
		if err := checkListenAddr("fix", *fixAddr); err != nil {
			return usageErr(err)
		}
	}
	dialect, err := fixwire.ParseDialect(*fixDialect)
	if err != nil || dialect == "" {
		return usageErr(fmt.Errorf("--fix-dialect %q: want ctrader or fix44", *fixDialect))
	}
	for _, r := range []struct {
		name string
		v    float64
	}{{"requote-rate", *requote}, {"timeout-rate", *timeout}, {"disconnect-rate", *disconnect}, {"drop-event-rate", *dropEvent}} {
		if !(r.v >= 0 && r.v <= 1) {
			return usageErr(fmt.Errorf("--%s %v: must be a probability from 0 to 1", r.name, r.v))
		}
	}
	if *latency < 0 {
		return usageErr(fmt.Errorf("--latency %v: must not be negative", *latency))
	}
	if *token == "" && !*insecure {
		return usageErr(errors.New("--token (or COPIER_TOKEN) is required: the bridge's control API provisions accounts and moves prices; --insecure serves it to anyone"))
	}
	if *fixAddr != "" && strings.ContainsRune(*token, '\x01') {
		return usageErr(errors.New("--token holds SOH (0x01), which a FIX Logon cannot carry"))
	}
	log, err := newLogger(stderr, *logFormat, *logLevel)
	if err != nil {
		return usageErr(err)
	}

	srv := sim.New(sim.Config{
		Seed:          *seed,
		AutoProvision: *autoProvision,
		TriggerStops:  *triggerStops,
		Options:       broker.ServerOptions{EnforceTokens: *enforce, DedupRequests: *dedup},
		Faults: broker.Faults{Latency: *latency, RequoteRate: *requote, TimeoutRate: *timeout,
			DisconnectRate: *disconnect, DropEventRate: *dropEvent},
	})
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "copierd sim: %s\n", oneLine(err))
		return exitFailure
	}
	if *fixAddr != "" {
		front, err := fixfront.Start(*fixAddr, srv, srv, fixfront.Options{CompID: *fixCompID, Token: *token, Log: log, Strict: dialect == fixwire.DialectFIX44, MaxConns: fixFrontMaxConns()})
		if err != nil {
			_ = l.Close()
			fmt.Fprintf(stderr, "copierd sim: %s\n", oneLine(err))
			return exitFailure
		}
		defer front.Close()
		fmt.Fprintf(stdout, "sim FIX acceptor on %s (TargetCompID %s, dialect %s)\n", front.Addr(), *fixCompID, dialect)
		log.Info().Str("addr", front.Addr()).Str("comp_id", *fixCompID).Str("dialect", string(dialect)).Msg("FIX acceptor started")
	}
	bs := bridge.NewServer(srv, srv, bridge.ServerOptions{Token: *token, Logger: log})
	served := make(chan error, 1)
	go func() { served <- bs.Serve(l) }()
	fmt.Fprintf(stdout, "sim listening on %s (seed %d)\n", l.Addr(), *seed)
	log.Info().Str("addr", l.Addr().String()).Int64("seed", *seed).Bool("auto_provision", *autoProvision).
		Bool("enforce_tokens", *enforce).Bool("dedup", *dedup).Msg("simulated trade server started")

	select {
	case <-ctx.Done():
		log.Info().Msg("signalled; closing connections")
		closeErr := bs.Close()
		<-served
		if closeErr != nil {
			log.Error().Err(closeErr).Msg("close")
		}
		return exitOK
	case err := <-served:
		_ = bs.Close()
		if errors.Is(err, bridge.ErrServerClosed) {
			return exitOK
		}
		fmt.Fprintf(stderr, "copierd sim: %s\n", oneLine(err))
		return exitFailure
	}
}

// fixFrontMaxConns caps the FIX front's connections at half the process's descriptors (at
// most fixfront's default, at least 512): idle FIX connections once took all 20,000, and
// the process's HTTP and database connections failed with them.
func fixFrontMaxConns() int {
	return max(512, min(fixfront.DefaultMaxConns, fileLimit()/2))
}
