package stress

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/snapcopier/copier/broker"
)

// Report is the outcome of a stress run; report.json is this value.
type Report struct {
	// OK is true when every invariant holds.
	OK       bool         `json:"ok"`
	Seed     uint64       `json:"seed"`
	Started  time.Time    `json:"started"`
	Finished time.Time    `json:"finished"`
	Config   ReportConfig `json:"config"`

	LoadSeconds     float64 `json:"load_seconds"`
	Converged       bool    `json:"converged"`
	ConvergeSeconds float64 `json:"converge_seconds"`

	Load    LoadSummary   `json:"load"`
	Orders  OrderSummary  `json:"orders"`
	Faults  []FaultRecord `json:"faults"`
	Freezes []Freeze      `json:"freezes,omitempty"`

	// The verdict's numbers, in the order of the issue.
	Overlaps  OverlapResult   `json:"overlapping_senders"`
	Positions PositionsResult `json:"positions"`
	Failover  FailoverResult  `json:"failover"`
	// Scale is the scale scenario's membership changes (nil in the faults scenario).
	Scale   *ScaleResult  `json:"scale,omitempty"`
	Latency LatencyResult `json:"copy_latency"`
	// FindRate is the ramp of Options.FindRate and its knee.
	FindRate *FindRateResult `json:"find_rate,omitempty"`
	// Stages splits the copy latency by stage (nil when the nodes did not trace).
	Stages *StageResult `json:"stages,omitempty"`
	// Database is PostgreSQL's time during the load by statement (nil without
	// pg_stat_statements: an external database, or a server without the module).
	Database    *DatabaseTime `json:"database,omitempty"`
	StaleWrites StaleSummary  `json:"stale_writes"`
	Nodes       []NodeReport  `json:"nodes"`

	Invariants []Invariant        `json:"invariants"`
	Ownership  []ownershipSample  `json:"ownership,omitempty"`
	OutDir     string             `json:"out_dir"`
	Files      []string           `json:"files,omitempty"`
	Notes      []string           `json:"notes,omitempty"`
	latencies  []time.Duration    // for the chart
	loadStart  time.Time          // for the charts
	faultKinds map[FaultKind]bool // requested
}

// ReportConfig is the configuration of the run.
type ReportConfig struct {
	Masters        int         `json:"masters"`
	Followers      int         `json:"followers"`
	Links          int         `json:"links"`
	Nodes          int         `json:"nodes"`
	Capacity       int         `json:"capacity"`
	Lease          string      `json:"lease"`
	Fence          string      `json:"fence"`
	Interval       string      `json:"interval"`
	ReconcileEvery string      `json:"reconcile_every"`
	Rate           float64     `json:"rate"`
	Duration       string      `json:"duration"`
	Faults         []FaultKind `json:"faults"`
	FaultEvery     string      `json:"fault_every"`
	EnforceTokens  bool        `json:"enforce_tokens"`
	Dedup          bool        `json:"dedup"`
	Database       string      `json:"database"` // "throwaway" or "external"
}

// LoadSummary counts the master trades.
type LoadSummary struct {
	MasterEvents  int64 `json:"master_events"`
	Opens         int64 `json:"opens"`
	Modifies      int64 `json:"modifies"`
	PartialCloses int64 `json:"partial_closes"`
	Closes        int64 `json:"closes"`
	Failures      int64 `json:"failures"`
}

// OrderSummary counts the order log.
type OrderSummary struct {
	Total        int            `json:"total"`
	Master       int            `json:"master"`
	Nodes        int            `json:"nodes"` // sent by nodes
	Executed     int            `json:"executed"`
	Rejected     int            `json:"rejected"`
	FencedToken  int            `json:"fenced_token"`
	Deduplicated int            `json:"deduplicated"`
	ByNode       map[string]int `json:"by_node"`
}

// StaleSummary is item 6 of the verdict.
type StaleSummary struct {
	// Applied is the number of stale writes that reached the database (must be 0).
	Applied         int `json:"applied"`
	AuditStaleWrite int `json:"audit_stale_writes"`
	FutureEpochRows int `json:"future_epoch_rows"`
	EpochChanges    int `json:"epoch_changes"`
	// RefusedByFence is what the nodes report refused by the fenced writes
	// (copier_stale_writes_refused_total): stale writes that were stopped.
	RefusedByFence int64 `json:"refused_by_fence"`
	// DroppedWork is orders the nodes dropped at a closed gate (copier_dropped_work_total;
	// a killed node's count is its last scrape).
	DroppedWork int64    `json:"dropped_work"`
	Examples    []string `json:"examples,omitempty"`
}

// NodeReport is item 7 of the verdict: one node process.
type NodeReport struct {
	ID            string        `json:"id"`
	PID           int           `json:"pid"`
	Started       time.Time     `json:"started"`
	Ended         time.Time     `json:"ended"`
	LifetimeS     float64       `json:"lifetime_s"`
	End           string        `json:"end"` // killed, stopped, exited
	ExitError     string        `json:"exit_error,omitempty"`
	MaxRSSMB      float64       `json:"max_rss_mb"`
	LastRSSMB     float64       `json:"last_rss_mb"`
	CPUSeconds    float64       `json:"cpu_seconds"`
	CPUPercent    float64       `json:"cpu_percent"`
	Threads       int64         `json:"threads"`
	Goroutines    *int64        `json:"goroutines"`       // null: the node does not expose go_goroutines
	Memory        *MemoryReport `json:"memory,omitempty"` // null: never scraped
	AccountsMax   int           `json:"accounts_held_max"`
	AccountsLast  int           `json:"accounts_held_last"`
	OrdersSent    int           `json:"orders_sent"`
	OrdersOK      int64         `json:"orders_ok"`
	OrdersFailed  int64         `json:"orders_failed"`
	DroppedWork   int64         `json:"dropped_work"`
	StaleRefused  int64         `json:"stale_writes_refused"`
	CycleFailures int64         `json:"lease_cycle_failures"`
	LeasesLost    int64         `json:"leases_lost"`
	// Skips are the master positions the node's links did not copy, by reason
	// (copier_skips_total): the stress's links copy everything, so any is a lead to a
	// missed copy.
	Skips map[string]int64 `json:"skips,omitempty"`
	Log   string           `json:"log"`
}

// Invariant is one line of the verdict.
type Invariant struct {
	Number int    `json:"number"`
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Value  string `json:"value"`
	Want   string `json:"want"`
}

// report builds the report from the final state and what the run recorded.
func (r *runner) report(f finalState, exits map[string]nodeExit, loadDur time.Duration, converged bool, convergeS float64) Report {
	o := r.o
	rep := Report{
		Seed: o.Seed, Started: r.setupStart, Finished: time.Now(),
		LoadSeconds: round3(loadDur.Seconds()), Converged: converged, ConvergeSeconds: convergeS,
		OutDir: o.OutDir, faultKinds: map[FaultKind]bool{},
	}
	if ls := r.loadStart.Load(); ls != nil {
		rep.loadStart = *ls
	}
	db := "throwaway"
	if r.cluster == nil {
		db = "external"
	}
	rep.Config = ReportConfig{Masters: o.Masters, Followers: o.Followers, Links: len(r.links), Nodes: o.Nodes, Capacity: o.Capacity,
		Lease: o.Lease.String(), Fence: o.Fence.String(), Interval: o.Interval.String(), ReconcileEvery: o.ReconcileEvery.String(),
		Rate: o.Rate, Duration: o.Duration.String(), Faults: o.Faults, FaultEvery: o.FaultEvery.String(),
		EnforceTokens: o.EnforceTokens, Dedup: o.Dedup, Database: db}
	for _, k := range o.Faults {
		rep.faultKinds[k] = true
	}
	g := r.gen.Counts()
	rep.Load = LoadSummary{MasterEvents: g.Events(), Opens: g.Opens, Modifies: g.Modifies,
		PartialCloses: g.Partials, Closes: g.Closes, Failures: g.Failures}

	rep.Orders = summariseOrders(f.orders)
	r.faultsMu.Lock()
	rep.Faults = slices.Clone(r.faults)
	rep.Freezes = slices.Clone(r.freezes)
	failovers := slices.Clone(r.failovers)
	if o.Scenario == ScenarioScale {
		sc := r.scale
		sc.Steps, sc.CleanStops = slices.Clone(sc.Steps), slices.Clone(sc.CleanStops)
		sc.LimitS = round3(r.scaleLimit().Seconds())
		rep.Scale = &sc
	}
	r.faultsMu.Unlock()

	var long []Freeze
	for _, fr := range rep.Freezes {
		if fr.End.Sub(fr.Start) > o.Fence {
			long = append(long, fr)
		}
	}
	rep.Overlaps = CheckOverlaps(OverlapInput{Orders: f.orders, LongFreezes: long, Slack: max(2*time.Second, 2*o.Interval),
		EnforceTokens: o.EnforceTokens, Claims: f.claims})
	if len(rep.Overlaps.Overlaps) > MaxIssues {
		rep.Overlaps.Overlaps = rep.Overlaps.Overlaps[:MaxIssues]
	}
	if len(rep.Overlaps.Late) > MaxIssues {
		rep.Overlaps.Late = rep.Overlaps.Late[:MaxIssues]
	}
	rep.Positions = CheckPositions(r.links, f.positions)
	rep.Failover = SummariseFailovers(failovers, o.Lease+o.Interval, o.FailoverSlack)
	copies, latency := matchCopies(f.orders, r.links)
	rep.Latency, rep.latencies = latency, latencies(copies)
	rep.FindRate = r.rateSteps
	if o.TraceCopies {
		records, dropped, errs := r.readTraces()
		st := StageAccounting(copies, records, dropped)
		rep.Stages = &st
		for _, err := range errs {
			rep.Notes = append(rep.Notes, "copy trace: "+err.Error())
		}
	}

	rep.StaleWrites = StaleSummary{AuditStaleWrite: f.audit.StaleWrites, FutureEpochRows: f.audit.FutureEpochRows,
		EpochChanges: f.audit.EpochChanges, Examples: f.audit.Examples}
	rep.StaleWrites.Applied = f.audit.StaleWrites + f.audit.FutureEpochRows

	// Ownership over time (from the database samples).
	r.samplesMu.Lock()
	samples := slices.Clone(r.samples)
	r.samplesMu.Unlock()
	maxHeld, lastHeld := map[string]int{}, map[string]int{}
	for i := range samples {
		samples[i].T = round3(samples[i].At.Sub(rep.loadStart).Seconds())
		for node, n := range samples[i].Counts {
			maxHeld[node] = max(maxHeld[node], n)
		}
	}
	if f.owned != nil {
		lastHeld = f.owned
	}
	rep.Ownership = samples

	for _, n := range r.allNodes() {
		n.mu.Lock()
		st := n.stats
		n.mu.Unlock()
		if rep.Scale != nil {
			rep.Scale.HandOffs += st.handOffs
		}
		ex := exits[n.id]
		nr := NodeReport{ID: n.id, PID: n.pid, Started: n.started, Ended: ex.ended, Log: filepath.Base(n.logPath),
			MaxRSSMB: mb(st.maxRSSKB), LastRSSMB: mb(st.lastRSSKB), CPUSeconds: float64(st.cpuTicks) / clockTicks, Threads: st.threads,
			AccountsMax: maxHeld[n.id], AccountsLast: lastHeld[n.id], OrdersSent: rep.Orders.ByNode[n.id],
			OrdersOK: st.ordersOK, OrdersFailed: st.ordersFailed, DroppedWork: st.droppedWork, StaleRefused: st.staleRefused,
			CycleFailures: st.cycleFailures, LeasesLost: st.leasesLost, Skips: st.skips}
		if _, ok := maxHeld[n.id]; !ok {
			nr.AccountsMax = int(st.maxOwned) // never sampled from the database: the node's own count
		}
		if st.goroutines >= 0 {
			g := st.goroutines
			nr.Goroutines = &g
		}
		nr.Memory = memoryReport(st.memory, rep.loadStart, loadDur)
		end := ex.ended
		if end.IsZero() {
			end = time.Now()
		}
		nr.LifetimeS = round3(end.Sub(n.started).Seconds())
		if nr.LifetimeS > 0 {
			nr.CPUPercent = round3(100 * nr.CPUSeconds / nr.LifetimeS)
		}
		switch ex.state {
		case nodeKilled:
			nr.End = "killed"
		case nodeStopping:
			nr.End = "stopped"
		default:
			nr.End = "exited"
		}
		if ex.err != nil {
			nr.ExitError = ex.err.Error()
		}
		rep.StaleWrites.RefusedByFence += st.staleRefused
		rep.StaleWrites.DroppedWork += st.droppedWork
		rep.Nodes = append(rep.Nodes, nr)
	}
	if r.cluster == nil && rep.faultKinds[FaultRestartDB] {
		rep.Notes = append(rep.Notes, "restart-db was skipped: the database is external")
	}
	for _, n := range rep.Nodes {
		if n.Goroutines == nil {
			rep.Notes = append(rep.Notes, "goroutines are null for nodes whose /metrics had no go_goroutines (or was never scraped); threads come from /proc")
			break
		}
	}
	rep.Invariants = rep.invariants(o)
	rep.OK = true
	for _, inv := range rep.Invariants {
		rep.OK = rep.OK && inv.OK
	}
	return rep
}

func mb(kb int64) float64 { return round3(float64(kb) / 1024) }

// summariseOrders counts the order log.
func summariseOrders(orders []broker.OrderLogEntry) OrderSummary {
	s := OrderSummary{ByNode: map[string]int{}}
	for _, e := range orders {
		s.Total++
		if e.Master {
			s.Master++
			continue
		}
		s.Nodes++
		s.ByNode[e.Node]++
		switch {
		case e.Duplicate:
			s.Deduplicated++
		case e.Executed:
			s.Executed++
		default:
			s.Rejected++
		}
		if e.Result == broker.CodeFencedToken {
			s.FencedToken++
		}
	}
	return s
}

// invariants evaluates the verdict.
func (rep *Report) invariants(o Options) []Invariant {
	ov := rep.Overlaps
	var out []Invariant
	add := func(name string, ok bool, value, want string) {
		out = append(out, Invariant{Number: len(out) + 1, Name: name, OK: ok, Value: value, Want: want})
	}
	ovWant := "0 unexplained; those explained by a freeze longer than the fence must be repaired (duplicates 0)"
	ovWant += "; no order executed after a newer claim of its follower outside such a freeze"
	ovOK := ov.Unexplained == 0 && ov.LateUnexplained == 0
	if o.EnforceTokens {
		ovWant = "0 unexplained; every stale order after the new owner's first executed order rejected; no order executed after a newer claim outside a freeze > fence"
		ovOK = ovOK && ov.EnforcementViolations == 0
	}
	add("overlapping senders", ovOK,
		fmt.Sprintf("%d unexplained of %d overlaps (%d explained by freezes > fence: %d stale orders, %d rejected, %d executed; enforcement violations %d); "+
			"%d orders after a newer claim: %d refused (token or deadline), %d executed, %d of them unexplained",
			ov.Unexplained, ov.Total, ov.Explained, ov.StaleOrders, ov.StaleRejected, ov.StaleExecuted, ov.EnforcementViolations,
			ov.LateOrders, ov.LateRefused, ov.LateExecuted, ov.LateUnexplained), ovWant)
	p := rep.Positions
	add("duplicates after convergence", p.Duplicates == 0, fmt.Sprintf("%d", p.Duplicates), "0")
	add("missed copies", p.Missing+p.Orphans+p.Unidentified+p.Foreign == 0,
		fmt.Sprintf("%d (open masters without copy %d, copies of closed masters %d, unidentified %d, foreign %d; %d master positions, %d copies)",
			p.Missing+p.Orphans+p.Unidentified+p.Foreign, p.Missing, p.Orphans, p.Unidentified, p.Foreign, p.MasterPositions, p.Copies), "0")
	if sc := rep.Scale; sc != nil {
		var parts []string
		ok := len(sc.Steps) > 0
		for _, st := range sc.Steps {
			ok = ok && st.Balanced
			parts = append(parts, fmt.Sprintf("%s: %.2fs", st.What, st.Seconds))
		}
		add("balance after every membership change", ok,
			fmt.Sprintf("%s; %d hand-offs", strings.Join(parts, "; "), sc.HandOffs),
			fmt.Sprintf("every running node within ±10 %% of its share, each within %.0fs", sc.LimitS))
		csOK := len(sc.CleanStops) > 0
		var cs []string
		for _, c := range sc.CleanStops {
			csOK = csOK && c.Done
			cs = append(cs, fmt.Sprintf("%s's %d accounts owned by others %.2fs after SIGTERM", c.Node, c.Accounts, c.Seconds))
		}
		add("clean stop handed over", csOK, strings.Join(cs, "; "),
			"every account of a cleanly stopped node owned by another node (target ≤ 1 s after its release; judged within the balance limit)")
	}
	fo := rep.Failover
	foOK := fo.Done == fo.Kills && (fo.Kills == 0 || fo.MaxS <= fo.LimitS)
	add("failover after kill", foOK,
		fmt.Sprintf("%d of %d kills failed over; p50 %.2fs, max %.2fs (lease + interval %.1fs)", fo.Done, fo.Kills, fo.P50s, fo.MaxS, fo.BoundS),
		fmt.Sprintf("every kill, max ≤ %.1fs (lease + interval + slack)", fo.LimitS))
	l := rep.Latency
	add("copy latency", l.Samples > 0,
		fmt.Sprintf("p50 %.1f ms, p99 %.1f ms, max %.1f ms over %d copies", l.P50ms, l.P99ms, l.MaxMs, l.Samples), "copies were made (latency is reported, not judged)")
	sw := rep.StaleWrites
	add("stale writes applied", sw.Applied == 0,
		fmt.Sprintf("%d (refused by the fence %d, dropped work %d)", sw.Applied, sw.RefusedByFence, sw.DroppedWork), "0")
	var unexpected []string
	for _, n := range rep.Nodes {
		switch {
		case n.End == "exited":
			unexpected = append(unexpected, n.ID+" exited by itself")
		case n.End == "stopped" && n.ExitError != "":
			unexpected = append(unexpected, n.ID+" did not stop cleanly: "+n.ExitError)
		}
	}
	val := fmt.Sprintf("%d node processes, all ended as intended", len(rep.Nodes))
	if len(unexpected) > 0 {
		val = strings.Join(unexpected, "; ")
	}
	add("node processes", len(unexpected) == 0, val, "no node exits by itself; every node stops cleanly at the end (resource use listed per node)")
	injected := map[FaultKind]bool{}
	var errs []string
	for _, f := range rep.Faults {
		if f.Err == "" {
			injected[f.Kind] = true
		} else if !(f.Kind == FaultRestartDB && rep.Config.Database == "external") {
			errs = append(errs, fmt.Sprintf("fault %d %s: %s", f.Seq, f.Kind, f.Err))
		}
	}
	var missing []string
	for _, k := range o.Faults {
		if !injected[k] && !(k == FaultRestartDB && rep.Config.Database == "external") {
			missing = append(missing, string(k))
		}
	}
	n := 0
	for _, f := range rep.Faults {
		if f.Err == "" {
			n++
		}
	}
	fval := fmt.Sprintf("%d injected", n)
	if len(missing) > 0 {
		fval += "; never injected: " + strings.Join(missing, ", ")
	}
	if len(errs) > 0 {
		fval += "; " + strings.Join(errs, "; ")
	}
	add("faults injected", len(missing) == 0 && len(errs) == 0, fval, "every requested kind injected without error")
	return out
}

// WriteSummary writes the text summary of the report.
func (rep Report) WriteSummary(w io.Writer) {
	pass := 0
	for _, inv := range rep.Invariants {
		if inv.OK {
			pass++
		}
	}
	verdict := "PASS"
	if !rep.OK {
		verdict = "FAIL"
	}
	fmt.Fprintf(w, "\nverdict: %s — %d of %d invariants hold (seed %d; load %.0fs; converged %v after %.1fs)\n",
		verdict, pass, len(rep.Invariants), rep.Seed, rep.LoadSeconds, rep.Converged, rep.ConvergeSeconds)
	for _, inv := range rep.Invariants {
		mark := "ok  "
		if !inv.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "  %s %d. %-28s %s\n", mark, inv.Number, inv.Name, inv.Value)
		if !inv.OK {
			fmt.Fprintf(w, "          want: %s\n", inv.Want)
		}
	}
	fmt.Fprintf(w, "\nload: %d master events (%d opens, %d SL/TP changes, %d partial closes, %d closes); orders by nodes %d (%d executed, %d rejected, %d fenced)\n",
		rep.Load.MasterEvents, rep.Load.Opens, rep.Load.Modifies, rep.Load.PartialCloses, rep.Load.Closes,
		rep.Orders.Nodes, rep.Orders.Executed, rep.Orders.Rejected, rep.Orders.FencedToken)
	if rep.FindRate != nil {
		fmt.Fprintln(w)
		for _, l := range rep.FindRate.summary() {
			fmt.Fprintln(w, l)
		}
	}
	if rep.Stages != nil {
		fmt.Fprintln(w)
		for _, l := range rep.Stages.summary() {
			fmt.Fprintln(w, l)
		}
	}
	if rep.Database != nil {
		fmt.Fprintln(w)
		for _, l := range rep.Database.summary() {
			fmt.Fprintln(w, l)
		}
	}
	fmt.Fprintf(w, "\nnodes:\n")
	for _, n := range rep.Nodes {
		gr := "n/a"
		if n.Goroutines != nil {
			gr = fmt.Sprint(*n.Goroutines)
		}
		fmt.Fprintf(w, "  %-8s %-7s %6.1fs  rss max %6.1f MB  cpu %6.1fs (%5.1f%%)  threads %3d  goroutines %s  accounts max %5d last %5d  orders %6d  dropped %d  cycle failures %d  lost %d%s\n",
			n.ID, n.End, n.LifetimeS, n.MaxRSSMB, n.CPUSeconds, n.CPUPercent, n.Threads, gr, n.AccountsMax, n.AccountsLast, n.OrdersSent, n.DroppedWork, n.CycleFailures, n.LeasesLost, skipsText(n.Skips))
	}
	writeMemory(w, rep.Nodes)
	fmt.Fprintf(w, "\nfaults:\n")
	for _, f := range rep.Faults {
		target := f.Target
		if target == "" {
			target = "-"
		}
		errs := ""
		if f.Err != "" {
			errs = " [" + f.Err + "]"
		}
		fmt.Fprintf(w, "  %s +%6.1fs..+%6.1fs  %-13s %-8s %s%s\n", f.Start.Format("15:04:05.000"), f.StartS, f.EndS, kindLabel(f), target, f.Detail, errs)
	}
	for _, i := range rep.Positions.Issues {
		fmt.Fprintf(w, "  out of line: follower %s master %s ticket %d copy %d: %s\n", i.Follower, i.Master, i.MasterTicket, i.FollowerTicket, i.Detail)
	}
	for _, ov := range rep.Overlaps.Overlaps {
		if !ov.Explained {
			fmt.Fprintf(w, "  overlap: follower %s: %s\n", ov.Follower, ov.Reason)
		}
	}
	for _, l := range rep.Overlaps.Late {
		if !l.Explained {
			fmt.Fprintf(w, "  late order: follower %s: %s (token %d) executed at %s, after %s claimed epoch %d at %s\n",
				l.Follower, l.Node, l.Token, l.At.Format("15:04:05.000"), l.Claim.Node, l.Claim.Epoch, l.Claim.At.Format("15:04:05.000"))
		}
	}
	for _, e := range rep.StaleWrites.Examples {
		fmt.Fprintf(w, "  stale write: %s\n", e)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if len(rep.Files) > 0 {
		fmt.Fprintf(w, "output: %s (%s)\n", rep.OutDir, strings.Join(rep.Files, ", "))
	}
}

func kindLabel(f FaultRecord) string {
	if f.Variant != "" {
		return string(f.Kind) + "-" + f.Variant
	}
	return string(f.Kind)
}

// writeOutputs writes report.json and the charts into the output directory, and when the
// verdict fails the evidence too: the whole order log (orders.jsonl.gz) and the final
// positions (positions.json).
func (r *runner) writeOutputs(rep *Report, f finalState) error {
	charts, err := writeCharts(*rep, r.o)
	if err != nil {
		rep.Notes = append(rep.Notes, "charts: "+err.Error())
	}
	rep.Files = append(rep.Files, "report.json", "run.log", "faults.log")
	rep.Files = append(rep.Files, charts...)
	if !rep.OK {
		if err := writeEvidence(r.o.OutDir, f); err != nil {
			rep.Notes = append(rep.Notes, "evidence: "+err.Error())
		} else {
			rep.Files = append(rep.Files, "orders.jsonl.gz", "positions.json")
		}
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return fmt.Errorf("stress: report: %w", err)
	}
	if err := os.WriteFile(filepath.Join(r.o.OutDir, "report.json"), b, 0o644); err != nil {
		return fmt.Errorf("stress: report: %w", err)
	}
	return nil
}

// writeEvidence writes the order log and the final positions.
func writeEvidence(dir string, f finalState) error {
	file, err := os.Create(filepath.Join(dir, "orders.jsonl.gz"))
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(file)
	enc := json.NewEncoder(zw)
	for _, e := range f.orders {
		if err := enc.Encode(e); err != nil {
			file.Close()
			return err
		}
	}
	if err := zw.Close(); err != nil {
		file.Close()
		return err
	}
	if err := file.Close(); err != nil {
		return err
	}
	b, err := json.Marshal(f.positions)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "positions.json"), b, 0o644)
}

// skipsText is a node line's "  skipped too_old 3, stop_passed 1" (reasons sorted), or ""
// when its links skipped nothing.
func skipsText(skips map[string]int64) string {
	if len(skips) == 0 {
		return ""
	}
	parts := make([]string, 0, len(skips))
	for _, r := range slices.Sorted(maps.Keys(skips)) {
		parts = append(parts, fmt.Sprintf("%s %d", r, skips[r]))
	}
	return "  skipped " + strings.Join(parts, ", ")
}
