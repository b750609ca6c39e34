package stress

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/snapcopier/copier/leasekeeper"
)

// FaultKind is one kind of injected fault.
type FaultKind string

// Fault kinds (the values of --faults).
const (
	// FaultKill sends SIGKILL to a node and starts a new one (with a new node id).
	FaultKill FaultKind = "kill"
	// FaultFreeze sends SIGSTOP to a node, once for less than the fence and once for
	// more, then SIGCONT.
	FaultFreeze FaultKind = "freeze"
	// FaultCut drops all traffic between a node and PostgreSQL, then heals the link.
	FaultCut FaultKind = "cut"
	// FaultLatency adds latency between a node and PostgreSQL.
	FaultLatency FaultKind = "latency"
	// FaultRestartDB restarts PostgreSQL (abruptly; connections drop, data survives).
	FaultRestartDB FaultKind = "restart-db"
	// FaultBroker makes the simulator requote, time out with unknown outcome, drop
	// sessions and drop feed events for a while.
	FaultBroker FaultKind = "broker"
)

// AllFaults lists every fault kind, in the order --faults documents them.
func AllFaults() []FaultKind {
	return []FaultKind{FaultKill, FaultFreeze, FaultCut, FaultLatency, FaultRestartDB, FaultBroker}
}

// ParseFaults parses a comma-separated list of fault kinds; "" and "none" mean none,
// "all" means every kind.
func ParseFaults(s string) ([]FaultKind, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "", "none":
		return nil, nil
	case "all":
		return AllFaults(), nil
	}
	var out []FaultKind
	for _, part := range strings.Split(s, ",") {
		k := FaultKind(strings.TrimSpace(part))
		if !slices.Contains(AllFaults(), k) {
			return nil, fmt.Errorf("unknown fault %q (want a comma-separated list of kill, freeze, cut, latency, restart-db, broker; or all, none)", k)
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out, nil
}

// Options configure a stress run. Start from DefaultOptions.
type Options struct {
	// DatabaseURL is the PostgreSQL the nodes share; empty starts a throwaway cluster
	// (store/pgcluster). An external database must hold no follower accounts; the
	// restart-db fault needs the throwaway cluster and is skipped otherwise.
	DatabaseURL string
	// Copierd is the path of the copierd binary the node processes run. Required.
	Copierd string
	// OutDir receives node logs, faults.log, report.json and the charts. Created if
	// missing; required.
	OutDir string

	Masters   int // master accounts (default 20)
	Followers int // follower accounts (default 2,000)
	Nodes     int // node processes running at once (default 4)
	// Capacity of each node; 0 picks ceil(1.25 × followers ÷ nodes), so the others have
	// room to take over from a frozen node.
	Capacity int

	Lease    time.Duration // node --lease (default 6 s)
	Fence    time.Duration // node --fence (default 2 s)
	Interval time.Duration // node --interval (default 1 s)
	// ReconcileEvery is the nodes' --reconcile-every; 0 picks max(10 s, capacity ÷ 100 per
	// second): short, so a duplicate a stale sender leaves is repaired within the
	// convergence period, but never shorter than two sweeps of the node's Reconciler
	// (200 reconciles per second), or the periodic reconciles would queue behind each
	// other (see FINDINGS.md).
	ReconcileEvery time.Duration

	// Rate is master events (opens, SL/TP changes, partial closes, closes) per second,
	// over all masters (default 10).
	Rate float64
	// Duration of the load (default 2 min). Faults are scheduled inside it; the load goes
	// on until the last fault has healed.
	Duration time.Duration
	// Warmup is the fault-free time at the start of the load (default 5 s).
	Warmup time.Duration
	// Faults are the kinds to inject (default all).
	Faults []FaultKind
	// FaultEvery is the mean time between fault starts (default 10 s); every kind is
	// injected at least once.
	FaultEvery time.Duration
	// Converge bounds the quiet period after the load: faults healed, no trading, until
	// every follower is in line (default 90 s, and at least Quiet + 30 s).
	Converge time.Duration
	// Quiet is the least quiet time before the verdict (default lease + 2 intervals).
	Quiet time.Duration
	// FailoverSlack is added to lease + interval to bound each failover (default 5 s).
	FailoverSlack time.Duration

	// Seed seeds the load, the fault schedule and the simulator (default 1).
	Seed uint64
	// EnforceTokens makes the simulator reject orders with a stale fencing token.
	EnforceTokens bool
	// Dedup makes the simulator de-duplicate request ids.
	Dedup bool
	// Broker is how the nodes reach the simulator: "bridge" (default) or "fix" (FIX 4.4
	// through the simulator's FIX front, broker/sim/fixfront).
	Broker string

	// Scenario is ScenarioFaults (default) or ScenarioScale: one node first, the others
	// join one by one during the load, then one stops cleanly and one is killed; Faults
	// is then the kill only, and Capacity defaults to Followers (one node holds all).
	Scenario string

	// Progress draws a progress bar on the output while running.
	Progress bool
	// NodeLogLevel is the nodes' --log-level (default info).
	NodeLogLevel string
	// FindRate ramps the load instead of trading at Rate for Duration: steps of
	// FindRateStep at rates rising ×1.5 from Rate, until the copies' p99 is above
	// FindRateTarget; the report gives the knee (findrate.go). Faults must be none.
	FindRate       bool
	FindRateStep   time.Duration // default 20 s
	FindRateTarget time.Duration // default 250 ms
	// TraceCopies has every node record each order's stages (copierd run --trace-copies)
	// for the report's stage accounting (default true).
	TraceCopies bool
}

// DefaultOptions returns the defaults documented on Options (Copierd and OutDir empty).
func DefaultOptions() Options {
	return Options{
		Masters: 20, Followers: 2000, Nodes: 4,
		Lease: 6 * time.Second, Fence: 2 * time.Second, Interval: time.Second,
		Rate: 10, Duration: 2 * time.Minute, Warmup: 5 * time.Second,
		Faults: AllFaults(), FaultEvery: 10 * time.Second,
		Converge: 90 * time.Second, FailoverSlack: 5 * time.Second,
		Seed: 1, Progress: true, NodeLogLevel: "info", TraceCopies: true,
		FindRateStep: 20 * time.Second, FindRateTarget: 250 * time.Millisecond,
	}
}

// ErrOptions wraps every validation error.
var ErrOptions = errors.New("invalid stress options")

// Validate checks the options and fills derived defaults (Capacity, Quiet).
func (o *Options) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrOptions, fmt.Sprintf(format, args...))
	}
	switch {
	case o.Copierd == "":
		return bad("the path of the copierd binary is required")
	case o.OutDir == "":
		return bad("an output directory is required")
	case o.Masters < 1 || o.Masters > 10_000:
		return bad("masters %d: want 1 to 10000", o.Masters)
	case o.FindRate && len(o.Faults) > 0:
		return bad("find-rate measures a fault-free cluster: use --faults none")
	case o.FindRate && (o.FindRateStep < 5*time.Second || o.FindRateTarget <= 0):
		return bad("find-rate: step %v (want ≥ 5s) and target %v (want > 0)", o.FindRateStep, o.FindRateTarget)
	case o.Followers < 1 || o.Followers > 100_000:
		return bad("followers %d: want 1 to 100000", o.Followers)
	case o.Nodes < 1 || o.Nodes > 64:
		return bad("nodes %d: want 1 to 64", o.Nodes)
	case o.Capacity < 0:
		return bad("capacity %d must not be negative", o.Capacity)
	case !(o.Rate > 0 && o.Rate <= 10_000):
		return bad("rate %v: want more than 0 and at most 10000 events per second", o.Rate)
	case o.Duration <= 0:
		return bad("duration must be positive")
	case o.Warmup < 0 || o.Warmup >= o.Duration:
		return bad("warmup %v must be at least 0 and shorter than the duration %v", o.Warmup, o.Duration)
	case o.FaultEvery <= 0:
		return bad("fault-every must be positive")
	case o.Converge <= 0:
		return bad("converge must be positive")
	case o.Quiet < 0 || o.FailoverSlack < 0:
		return bad("quiet and failover-slack must not be negative")
	case o.Broker != "" && o.Broker != "bridge" && o.Broker != "fix":
		return bad("broker %q: want bridge or fix", o.Broker)
	}
	if o.Broker == "" {
		o.Broker = "bridge"
	}
	switch o.Scenario {
	case "":
		o.Scenario = ScenarioFaults
	case ScenarioFaults:
	case ScenarioScale:
		o.Faults = []FaultKind{FaultKill}
		if o.Capacity == 0 {
			o.Capacity = o.Followers
		}
	default:
		return bad("scenario %q: want %s or %s", o.Scenario, ScenarioFaults, ScenarioScale)
	}
	// The nodes run with copierd run's default --clock-skew: validate as they will.
	timing := leasekeeper.Config{Lease: o.Lease, Fence: o.Fence, Interval: o.Interval, ClockSkew: leasekeeper.DefaultClockSkew}
	if err := timing.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrOptions, err)
	}
	for _, k := range o.Faults {
		if !slices.Contains(AllFaults(), k) {
			return bad("unknown fault %q", k)
		}
	}
	if o.NodeLogLevel == "" {
		o.NodeLogLevel = "info"
	}
	if o.Capacity == 0 {
		o.Capacity = max(1, int(math.Ceil(1.25*float64(o.Followers)/float64(o.Nodes))))
		if o.Nodes == 1 {
			o.Capacity = o.Followers
		}
	}
	if o.Capacity*o.Nodes < o.Followers {
		return bad("capacity %d × %d nodes cannot hold %d followers", o.Capacity, o.Nodes, o.Followers)
	}
	if o.ReconcileEvery == 0 {
		o.ReconcileEvery = max(10*time.Second, time.Duration(o.Capacity)*time.Second/100)
	}
	if o.Quiet == 0 {
		o.Quiet = o.Lease + 2*o.Interval
	}
	// The verdict waits Quiet first: a Converge shorter than that could never be met (at
	// the seed's timings, lease 60 s and interval 20 s, Quiet is 100 s against the
	// default 90 s).
	o.Converge = max(o.Converge, o.Quiet+30*time.Second)
	return nil
}
