package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/snapcopier/copier/cmd/copierd/stress"
	"github.com/snapcopier/copier/store"
)

const stressSynopsis = `stress [flags]

Runs the copier under load and faults and gives a verdict. It starts a throwaway
PostgreSQL (unless --database-url is given), serves the simulated trade server over the
bridge protocol, creates --masters masters and --followers followers with copy links of
mixed sizing modes, and runs --nodes real 'copierd run' processes, each reaching
PostgreSQL through its own in-process toxiproxy proxy. The masters trade at --rate
events per second for --duration while a seeded schedule injects --faults:

  kill        SIGKILL a node and start a new one (new node id)
  freeze      SIGSTOP a node for less than the fence, and another for more, then SIGCONT
  cut         drop all traffic between a node and PostgreSQL, then heal it
  latency     add latency between a node and PostgreSQL
  restart-db  restart PostgreSQL abruptly (throwaway PostgreSQL only)
  broker      simulator requotes, timeouts with unknown outcome, disconnects, dropped events

After a quiet convergence period it checks, from the simulator's order log, the
positions and the database: overlapping senders, duplicates, missed copies, failover
time after each kill, copy latency, stale writes applied and dropped work, and resource
use per node. It prints a progress bar and a summary and writes node logs, faults.log,
report.json and PNG charts to --out.

Exit status: 0 when every invariant holds, 1 when one does not (or the run failed), 2 on
bad flags.`

// runStress is the stress subcommand.
func runStress(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("stress", stressSynopsis, stderr)
	d := stress.DefaultOptions()
	o := d
	var faults string
	fs.StringVar(&o.DatabaseURL, "database-url", "", "PostgreSQL URL of an empty database (empty: start a throwaway PostgreSQL)")
	fs.StringVar(&o.Copierd, "copierd", "", "copierd binary the node processes run (default: this executable)")
	fs.StringVar(&o.OutDir, "out", "", "output directory for logs, report.json and charts (default: stress-YYYYMMDD-HHMMSS)")
	fs.IntVar(&o.Masters, "masters", d.Masters, "number of master accounts")
	fs.IntVar(&o.Followers, "followers", d.Followers, "number of follower accounts")
	fs.IntVar(&o.Nodes, "nodes", d.Nodes, "number of node processes running at once")
	fs.IntVar(&o.Capacity, "capacity", 0, "capacity of each node (0: ceil(1.25 × followers ÷ nodes))")
	fs.DurationVar(&o.Lease, "lease", d.Lease, "nodes' --lease")
	fs.DurationVar(&o.Fence, "fence", d.Fence, "nodes' --fence")
	fs.DurationVar(&o.Interval, "interval", d.Interval, "nodes' --interval")
	fs.DurationVar(&o.ReconcileEvery, "reconcile-every", 0, "nodes' --reconcile-every (0: max(10s, capacity ÷ 100 per second); negative: never)")
	fs.Float64Var(&o.Rate, "rate", d.Rate, "master events per second, over all masters")
	fs.DurationVar(&o.Duration, "duration", d.Duration, "how long the masters trade (faults are scheduled inside it)")
	fs.DurationVar(&o.Warmup, "warmup", d.Warmup, "fault-free time at the start of the load")
	fs.StringVar(&faults, "faults", "kill,freeze,cut,latency,restart-db,broker", "comma-separated fault kinds (or all, none)")
	fs.DurationVar(&o.FaultEvery, "fault-every", d.FaultEvery, "mean time between fault starts (every kind is injected at least once)")
	fs.DurationVar(&o.Converge, "converge", d.Converge, "longest quiet period after the load for the followers to come in line")
	fs.DurationVar(&o.Quiet, "quiet", 0, "shortest quiet period before the verdict (0: lease + 2 intervals)")
	fs.DurationVar(&o.FailoverSlack, "failover-slack", d.FailoverSlack, "a failover may take lease + interval + this")
	fs.Uint64Var(&o.Seed, "seed", d.Seed, "seed of the load, the fault schedule and the simulator")
	fs.BoolVar(&o.EnforceTokens, "enforce-tokens", false, "the simulator rejects orders with a stale fencing token")
	fs.BoolVar(&o.Dedup, "dedup", false, "the simulator de-duplicates request ids")
	fs.StringVar(&o.Scenario, "scenario", "faults", `"faults" (the nodes run from the start; faults are injected) or "scale" (one node first, the others join one by one, then one stops cleanly and one is killed; the verdict adds the time to balance and the clean stop's hand-over)`)
	fs.StringVar(&o.Broker, "broker", "bridge", `how the nodes reach the simulator: "bridge" or "fix" (FIX 4.4 through the simulator's FIX front)`)
	fs.BoolVar(&o.Progress, "progress", true, "draw a progress bar")
	fs.StringVar(&o.NodeLogLevel, "node-log-level", d.NodeLogLevel, "nodes' --log-level")
	fs.BoolVar(&o.FindRate, "find-rate", false, "ramp the load in steps (×1.5 from --rate) until the copies' p99 passes --find-rate-target, and report the knee: orders/s and CPU per order of every process (needs --faults none)")
	fs.DurationVar(&o.FindRateStep, "find-rate-step", d.FindRateStep, "length of one step of --find-rate")
	fs.DurationVar(&o.FindRateTarget, "find-rate-target", d.FindRateTarget, "p99 copy latency a --find-rate step must stay within")
	fs.BoolVar(&o.TraceCopies, "trace-copies", d.TraceCopies, "have every node record each order's stages (--trace-copies on the nodes) for the report's stage accounting")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	usageErr := func(err error) int {
		fmt.Fprintf(stderr, "copierd stress: %s\n", oneLine(err))
		return exitUsage
	}
	var err error
	if o.Faults, err = stress.ParseFaults(faults); err != nil {
		return usageErr(err)
	}
	if o.DatabaseURL != "" {
		if _, err := store.ParseConfig(o.DatabaseURL, store.Options{}); err != nil {
			return usageErr(err)
		}
	}
	if o.Copierd == "" {
		exe, err := os.Executable()
		if err != nil {
			return usageErr(fmt.Errorf("cannot find this executable (%v): pass --copierd", err))
		}
		if base := filepath.Base(exe); !strings.HasPrefix(base, "copierd") || strings.HasSuffix(base, ".test") {
			return usageErr(fmt.Errorf("this executable (%s) is not copierd: pass --copierd PATH", base))
		}
		o.Copierd = exe
	}
	if o.OutDir == "" {
		o.OutDir = "stress-" + time.Now().Format("20060102-150405")
	}
	if err := o.Validate(); err != nil {
		return usageErr(err)
	}
	rep, err := stress.Run(ctx, o, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "copierd stress: %s\n", oneLine(err))
		return exitFailure
	}
	if !rep.OK {
		return exitFailure
	}
	return exitOK
}
