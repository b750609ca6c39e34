package stress

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/snapcopier/copier/broker"
)

// Finding the knee (Options.FindRate): instead of one load at Options.Rate, the masters
// trade in steps of FindRateStep at rising rates (×1.5 a step, from Options.Rate) on the
// same cluster. After each step the load pauses for copies to land, and the step is
// measured from the order log: the copy latency of the master trades made during the
// step, the follower orders executed per second, and the CPU each process spent per
// order. The ramp stops at the first step whose p99 is above FindRateTarget (or whose
// masters could not trade at the asked rate); the knee is the last step within it.

// RateStep is one step of the ramp.
type RateStep struct {
	Rate         float64 `json:"rate"`          // master events per second asked for
	Events       float64 `json:"events_per_s"`  // ... and made
	OrdersPerSec float64 `json:"orders_per_s"`  // follower orders executed per second
	Copies       int     `json:"copies"`        // copies of the step's master trades
	P50ms        float64 `json:"p50_ms"`        // their latency
	P99ms        float64 `json:"p99_ms"`        //
	MaxMs        float64 `json:"max_ms"`        //
	Unmatched    int     `json:"unmatched"`     // opens of the step without a copy in time
	NodesCPUus   float64 `json:"nodes_cpu_us"`  // CPU per order: every node together (µs)
	StressCPUus  float64 `json:"stress_cpu_us"` // the stress process: simulator, bridge, proxies, load
	PGCPUus      float64 `json:"pg_cpu_us"`     // PostgreSQL, every backend
	Within       bool    `json:"within"`        // p99 ≤ target
}

// FindRateResult is the ramp and its knee.
type FindRateResult struct {
	TargetMs float64    `json:"target_p99_ms"`
	StepS    float64    `json:"step_s"`
	Steps    []RateStep `json:"steps"`
	// Knee is the last step within the target (nil when even the first was not).
	Knee *RateStep `json:"knee,omitempty"`
	// Stop says why the ramp ended.
	Stop string `json:"stop"`
}

// cpuSnapshot is the CPU ticks of the run's processes at one moment.
type cpuSnapshot struct{ nodes, stress, pg int64 }

func (r *runner) cpuNow() cpuSnapshot {
	var s cpuSnapshot
	for _, n := range r.liveNodes(true) {
		s.nodes += readCPUTicks(n.pid)
	}
	s.stress = readCPUTicks(os.Getpid())
	if r.cluster != nil {
		s.pg = treeCPUTicks(postmasterPID(r.cluster.DataDir()))
	}
	return s
}

// postmasterPID reads the PostgreSQL server's pid from its data directory (0: unknown).
func postmasterPID(dataDir string) int {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	return pid
}

// treeCPUTicks is the CPU ticks of pid and its children (PostgreSQL's backends are the
// postmaster's children). Backends that ended are not counted: a measurement over a step
// counts the long-lived pooled connections, which do the work.
func treeCPUTicks(pid int) int64 {
	if pid <= 0 {
		return 0
	}
	total := readCPUTicks(pid)
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := procStat(child); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			total += readCPUTicks(child)
		}
	}
	return total
}

// findRate runs the ramp. It returns when the ramp stops or ctx ends.
func (r *runner) findRate(ctx context.Context) FindRateResult {
	o := r.o
	res := FindRateResult{TargetMs: ms(o.FindRateTarget), StepS: o.FindRateStep.Seconds()}
	settle := max(2*time.Second, 2*o.Interval)
	rate := o.Rate
	var orders []broker.OrderLogEntry // the whole log so far, read a step at a time
	for i := 0; i < 16; i++ {
		if ctx.Err() != nil {
			res.Stop = "interrupted"
			break
		}
		before, events0 := r.cpuNow(), r.gen.Counts().Events()
		start := time.Now()
		sctx, cancel := context.WithTimeout(ctx, o.FindRateStep)
		r.gen.Run(sctx, rate)
		cancel()
		end := time.Now()
		events := r.gen.Counts().Events() - events0
		select { // copies of the step's last trades land
		case <-ctx.Done():
		case <-time.After(settle):
		}
		after := r.cpuNow()
		var lastSeq int64
		if len(orders) > 0 {
			lastSeq = orders[len(orders)-1].Seq
		}
		more, err := r.sim.OrderLog(ctx, lastSeq, 0)
		if err != nil {
			res.Stop = "order log: " + err.Error()
			break
		}
		orders = append(orders, more...)
		st := RateStep{Rate: round3(rate), Events: round3(float64(events) / end.Sub(start).Seconds())}
		copies, _ := matchCopies(orders, r.links)
		var lat []time.Duration
		for _, c := range copies {
			if !c.masterAt.Before(start) && c.masterAt.Before(end) {
				lat = append(lat, c.latency())
			}
		}
		executed := 0
		for _, e := range orders {
			if !e.Master && e.Executed && !e.ServerTime.Before(start) && e.ServerTime.Before(end.Add(settle)) {
				executed++
			}
		}
		st.Copies, st.OrdersPerSec = len(lat), round3(float64(executed)/end.Sub(start).Seconds())
		slices.Sort(lat)
		if len(lat) > 0 {
			st.P50ms, st.P99ms, st.MaxMs = ms(Percentile(lat, 50)), ms(Percentile(lat, 99)), ms(lat[len(lat)-1])
		}
		if executed > 0 {
			per := func(t0, t1 int64) float64 {
				return round3(float64(t1-t0) / clockTicks * 1e6 / float64(executed))
			}
			st.NodesCPUus, st.StressCPUus, st.PGCPUus = per(before.nodes, after.nodes), per(before.stress, after.stress), per(before.pg, after.pg)
		}
		st.Within = len(lat) > 0 && st.P99ms <= res.TargetMs
		res.Steps = append(res.Steps, st)
		r.logf("find-rate: step %d at %.1f/s (made %.1f/s): %.0f orders/s, p99 %.1f ms", i+1, rate, st.Events, st.OrdersPerSec, st.P99ms)
		if st.Within {
			k := st
			res.Knee = &k
		} else {
			res.Stop = fmt.Sprintf("p99 %.1f ms above %.0f ms at %.1f events/s", st.P99ms, res.TargetMs, rate)
			break
		}
		if st.Events < 0.8*rate {
			res.Stop = fmt.Sprintf("the masters made %.1f of %.1f events/s: the load generator is the limit", st.Events, rate)
			break
		}
		rate *= 1.5
	}
	if res.Stop == "" {
		res.Stop = "16 steps within the target"
	}
	return res
}

// summary is the ramp's lines of the text summary.
func (f FindRateResult) summary() []string {
	lines := []string{fmt.Sprintf("find-rate: steps of %.0fs, target p99 ≤ %.0f ms; stopped: %s", f.StepS, f.TargetMs, f.Stop),
		"  events/s asked  made  orders/s   p50 ms   p99 ms   max ms   CPU µs per order: nodes  stress(sim)  PostgreSQL"}
	for _, s := range f.Steps {
		mark := " "
		if !s.Within {
			mark = "×"
		}
		lines = append(lines, fmt.Sprintf("  %s %12.1f %5.1f %9.0f %8.1f %8.1f %8.1f   %22.0f %12.0f %11.0f",
			mark, s.Rate, s.Events, s.OrdersPerSec, s.P50ms, s.P99ms, s.MaxMs, s.NodesCPUus, s.StressCPUus, s.PGCPUus))
	}
	if f.Knee != nil {
		lines = append(lines, fmt.Sprintf("  knee: %.0f orders/s (%.1f master events/s) with p99 %.1f ms", f.Knee.OrdersPerSec, f.Knee.Events, f.Knee.P99ms))
	} else {
		lines = append(lines, "  knee: none (the first step was over the target)")
	}
	return lines
}
