package stress

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile"
)

// logBuilder writes a synthetic order log.
type logBuilder struct {
	t0      time.Time
	seq     int64
	entries []broker.OrderLogEntry
	ticket  int64
}

func newLog() *logBuilder {
	return &logBuilder{t0: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), ticket: 50_000_000}
}

func (b *logBuilder) at(s float64) time.Time {
	return b.t0.Add(time.Duration(s * float64(time.Second)))
}

func (b *logBuilder) add(e broker.OrderLogEntry) broker.OrderLogEntry {
	b.seq++
	e.Seq = b.seq
	b.entries = append(b.entries, e)
	return e
}

// master logs a master trade.
func (b *logBuilder) master(s float64, login string, op broker.OrderOp, ticket int64, volume float64) {
	b.add(broker.OrderLogEntry{ServerTime: b.at(s), Login: login, Op: op, Ticket: ticket, Volume: volume, Executed: true, Master: true})
}

// open logs a node's copy of master ticket mt on follower login; it returns the copy's ticket.
func (b *logBuilder) open(s float64, login, node string, token, mt int64, executed bool, code broker.Code) int64 {
	b.ticket++
	e := broker.OrderLogEntry{ServerTime: b.at(s), Login: login, Node: node, Token: token, Op: broker.OpOpen,
		Comment: reconcile.Marker(mt), Volume: 0.1, Executed: executed, Result: code}
	if executed {
		e.Ticket = b.ticket
	}
	b.add(e)
	return e.Ticket
}

// order logs any other node order on follower ticket ft.
func (b *logBuilder) order(s float64, login, node string, token int64, op broker.OrderOp, ft int64, executed bool, code broker.Code) {
	b.add(broker.OrderLogEntry{ServerTime: b.at(s), Login: login, Node: node, Token: token, Op: op, Ticket: ft, Volume: 0.1, Executed: executed, Result: code})
}

// cleanHandover is a follower that moves from node-1 (token 1) to node-2 (token 2) with a
// gap between their sending periods: no overlap.
func cleanHandover(b *logBuilder) {
	b.master(0, "m1", broker.OpOpen, 101, 0.2)
	ft := b.open(0.01, "f1", "node-1", 1, 101, true, 0)
	b.master(1, "m1", broker.OpModify, 101, 0)
	b.order(1.02, "f1", "node-1", 1, broker.OpModify, ft, true, 0)
	// node-1 is killed; node-2 claims after the lease.
	b.master(9, "m1", broker.OpClose, 101, 0.2)
	b.order(9.03, "f1", "node-2", 2, broker.OpClose, ft, true, 0)
}

func TestOverlapCleanHandoverIsNotAnOverlap(t *testing.T) {
	b := newLog()
	cleanHandover(b)
	res := CheckOverlaps(OverlapInput{Orders: b.entries, Slack: 2 * time.Second})
	if res.Total != 0 || res.Senders != 2 {
		t.Fatalf("got %+v, want no overlap and 2 senders", res)
	}
}

func TestOverlapPlantedIsReported(t *testing.T) {
	b := newLog()
	cleanHandover(b)
	// Planted: node-3 (token 3) starts sending for f2 while node-4 (token 4) already does.
	b.master(20, "m1", broker.OpOpen, 102, 0.3)
	ft := b.open(20.01, "f2", "node-4", 4, 102, true, 0)
	b.open(20.5, "f2", "node-3", 3, 102, true, 0) // a second copy from the stale sender
	b.order(21, "f2", "node-4", 4, broker.OpModify, ft, true, 0)
	res := CheckOverlaps(OverlapInput{Orders: b.entries, Slack: 2 * time.Second})
	if res.Total != 1 || res.Unexplained != 1 || res.Explained != 0 {
		t.Fatalf("got %+v, want one unexplained overlap", res)
	}
	ov := res.Overlaps[0]
	if ov.Follower != "f2" || ov.Stale.Node != "node-3" || ov.Fresh.Node != "node-4" || ov.StaleOrders != 1 || ov.StaleExecuted != 1 {
		t.Fatalf("overlap %+v: want stale node-3 (1 executed order) against fresh node-4 on f2", ov)
	}
	if !strings.Contains(ov.Reason, "not explained") {
		t.Fatalf("reason %q", ov.Reason)
	}
}

func TestOverlapSameTokenTwoNodesIsNeverExplained(t *testing.T) {
	b := newLog()
	b.open(1, "f1", "node-1", 7, 101, true, 0)
	b.open(2, "f1", "node-2", 7, 101, true, 0)
	b.open(3, "f1", "node-1", 7, 102, true, 0)
	res := CheckOverlaps(OverlapInput{Orders: b.entries, LongFreezes: []Freeze{{Node: "node-1", Start: b.at(0), End: b.at(10)}, {Node: "node-2", Start: b.at(0), End: b.at(10)}}})
	if res.Unexplained != 1 || !strings.Contains(res.Overlaps[0].Reason, "one token") {
		t.Fatalf("got %+v, want an unexplained same-token overlap", res)
	}
}

func TestOverlapExplainedByLongFreeze(t *testing.T) {
	for _, enforce := range []bool{false, true} {
		b := newLog()
		// node-1 owns f1 (token 1); it is frozen at 10 s for 9 s; node-2 claims (token 2)
		// at 17 s and sends; node-1 resumes at 19 s and sends one order that passed its
		// gate before the freeze.
		b.open(5, "f1", "node-1", 1, 101, true, 0)
		b.open(17, "f1", "node-2", 2, 102, true, 0)
		b.open(18, "f1", "node-2", 2, 103, true, 0)
		code, executed := broker.Code(0), true
		if enforce {
			code, executed = broker.CodeFencedToken, false
		}
		b.open(19.001, "f1", "node-1", 1, 104, executed, code)
		freezes := []Freeze{{Node: "node-1", Start: b.at(10), End: b.at(19)}}
		res := CheckOverlaps(OverlapInput{Orders: b.entries, LongFreezes: freezes, Slack: 2 * time.Second, EnforceTokens: enforce})
		if res.Total != 1 || res.Explained != 1 || res.Unexplained != 0 || res.StaleOrders != 1 || res.EnforcementViolations != 0 {
			t.Fatalf("enforce %v: got %+v, want one overlap explained by the freeze", enforce, res)
		}
		if enforce && res.StaleRejected != 1 {
			t.Fatalf("enforce: stale order not counted as rejected: %+v", res)
		}
		if !enforce && res.StaleExecuted != 1 {
			t.Fatalf("no enforce: stale order not counted as executed: %+v", res)
		}
		// Without the freeze the same log is unexplained.
		res = CheckOverlaps(OverlapInput{Orders: b.entries, Slack: 2 * time.Second, EnforceTokens: enforce})
		if res.Unexplained != 1 {
			t.Fatalf("enforce %v: without the freeze got %+v, want unexplained", enforce, res)
		}
	}
}

func TestOverlapEnforcementViolation(t *testing.T) {
	b := newLog()
	b.open(5, "f1", "node-1", 1, 101, true, 0)
	b.open(17, "f1", "node-2", 2, 102, true, 0)
	b.open(19.5, "f1", "node-1", 1, 104, true, 0) // executed although a higher token was seen
	freezes := []Freeze{{Node: "node-1", Start: b.at(10), End: b.at(19)}}
	res := CheckOverlaps(OverlapInput{Orders: b.entries, LongFreezes: freezes, Slack: 2 * time.Second, EnforceTokens: true})
	if res.Explained != 1 || res.EnforcementViolations != 1 {
		t.Fatalf("got %+v, want one explained overlap with one enforcement violation", res)
	}
	// An order outside freeze+slack is not explained.
	b.open(30, "f1", "node-1", 1, 105, true, 0)
	res = CheckOverlaps(OverlapInput{Orders: b.entries, LongFreezes: freezes, Slack: 2 * time.Second})
	if res.Unexplained != 1 {
		t.Fatalf("got %+v, want the late stale order unexplained", res)
	}
}

func TestOverlapIgnoresMasterTrades(t *testing.T) {
	b := newLog()
	b.master(1, "f1", broker.OpOpen, 1, 0.1) // a master trade on a login the checker also sees as follower
	b.open(2, "f1", "node-1", 1, 101, true, 0)
	res := CheckOverlaps(OverlapInput{Orders: b.entries})
	if res.Total != 0 || res.Senders != 1 {
		t.Fatalf("got %+v", res)
	}
}

// positions builds the final positions for CheckPositions tests.
func pos(ticket int64, magic int64, comment string) broker.Position {
	return broker.Position{Ticket: ticket, Symbol: "EURUSD", Side: broker.Buy, Volume: 0.1, Magic: magic, Comment: comment}
}

func TestPositionsInLine(t *testing.T) {
	links := []CheckLink{{Master: "m1", Follower: "f1", Magic: 11}, {Master: "m2", Follower: "f1", Magic: 12}, {Master: "m1", Follower: "f2", Magic: 11}}
	ps := map[string][]broker.Position{
		"m1": {pos(101, 0, "stress"), pos(102, 0, "stress")},
		"m2": {pos(201, 0, "stress")},
		"f1": {pos(1, 11, reconcile.Marker(101)), pos(2, 11, reconcile.Marker(102)+"[sl]"), pos(3, 12, reconcile.Marker(201))},
		"f2": {pos(4, 11, reconcile.Marker(101)), pos(5, 11, reconcile.Marker(102))},
	}
	res := CheckPositions(links, ps)
	if !res.Clean() || res.Followers != 2 || res.MasterPositions != 3 || res.Copies != 5 {
		t.Fatalf("got %+v, want clean", res)
	}
}

func TestPositionsPlantedDuplicateMissAndOrphan(t *testing.T) {
	links := []CheckLink{{Master: "m1", Follower: "f1", Magic: 11}, {Master: "m1", Follower: "f2", Magic: 11}, {Master: "m1", Follower: "f3", Magic: 11}}
	ps := map[string][]broker.Position{
		"m1": {pos(101, 0, ""), pos(102, 0, "")},
		// Planted duplicate: two copies of 101 on f1.
		"f1": {pos(1, 11, reconcile.Marker(101)), pos(2, 11, reconcile.Marker(101)), pos(3, 11, reconcile.Marker(102))},
		// Planted miss: f2 has no copy of 102.
		"f2": {pos(4, 11, reconcile.Marker(101))},
		// Planted orphan (copy of closed 99), an unidentified and a foreign position.
		"f3": {pos(5, 11, reconcile.Marker(101)), pos(6, 11, reconcile.Marker(102)), pos(7, 11, reconcile.Marker(99)), pos(8, 11, "from #5"), pos(9, 77, "manual")},
	}
	res := CheckPositions(links, ps)
	if res.Duplicates != 1 || res.Missing != 1 || res.Orphans != 1 || res.Unidentified != 1 || res.Foreign != 1 {
		t.Fatalf("got %+v, want one of each", res)
	}
	if res.Missed() != 3 || res.Clean() {
		t.Fatalf("Missed() = %d, Clean() = %v", res.Missed(), res.Clean())
	}
	want := map[string]string{"f1": "2 copies", "f2": "no copy", "f3": "master position closed"}
	for f, w := range want {
		found := false
		for _, i := range res.Issues {
			if i.Follower == f && strings.Contains(i.Detail, w) {
				found = true
			}
		}
		if !found {
			t.Errorf("no issue %q for %s in %+v", w, f, res.Issues)
		}
	}
}

func TestPositionsMissingFollowerHasEveryCopyMissing(t *testing.T) {
	links := []CheckLink{{Master: "m1", Follower: "f1", Magic: 11}}
	ps := map[string][]broker.Position{"m1": {pos(101, 0, ""), pos(102, 0, "")}}
	res := CheckPositions(links, ps)
	if res.Missing != 2 {
		t.Fatalf("got %+v", res)
	}
}

func TestCopyLatencies(t *testing.T) {
	b := newLog()
	links := []CheckLink{{Master: "m1", Follower: "f1", Magic: 11}, {Master: "m1", Follower: "f2", Magic: 11}}
	b.master(0, "m1", broker.OpOpen, 101, 0.4)
	ft1 := b.open(0.010, "f1", "node-1", 1, 101, true, 0)
	b.open(0.015, "f2", "node-2", 1, 101, false, broker.CodeRequote) // failed: not a copy
	ft2 := b.open(0.030, "f2", "node-2", 1, 101, true, 0)
	b.master(1, "m1", broker.OpModify, 101, 0)
	b.order(1.005, "f1", "node-1", 1, broker.OpModify, ft1, true, 0)
	b.master(2, "m1", broker.OpClose, 101, 0.2) // partial
	b.order(2.1, "f1", "node-1", 1, broker.OpClose, ft1, true, 0)
	b.order(2.2, "f2", "node-2", 1, broker.OpClose, ft2, true, 0)
	b.master(3, "m1", broker.OpClose, 101, 0.2) // full
	b.order(3.5, "f1", "node-1", 1, broker.OpClose, ft1, true, 0)
	b.order(3.001, "f2", "node-2", 1, broker.OpClose, ft2, true, 0)
	ds, res := CopyLatencies(b.entries, links)
	if len(ds) != 7 || res.Samples != 7 {
		t.Fatalf("samples %d %v, want 7", len(ds), ds)
	}
	if res.ByKind["open"] != 2 || res.ByKind["modify"] != 1 || res.ByKind["partial_close"] != 2 || res.ByKind["close"] != 2 {
		t.Fatalf("by kind %v", res.ByKind)
	}
	if res.MaxMs != 500 || res.P50ms != 30 {
		t.Fatalf("p50 %v max %v, want 30 and 500", res.P50ms, res.MaxMs)
	}
	if res.Unmatched != 0 {
		t.Fatalf("unmatched %d", res.Unmatched)
	}
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	if Percentile(ds, 50) != 50*time.Millisecond || Percentile(ds, 99) != 99*time.Millisecond || Percentile(ds, 100) != 100*time.Millisecond {
		t.Fatal("percentile")
	}
	if Percentile(nil, 50) != 0 || Percentile(ds[:1], 99) != time.Millisecond {
		t.Fatal("edge")
	}
}

func TestSummariseFailovers(t *testing.T) {
	fs := []Failover{{Node: "a", Seconds: 6.5, Done: true}, {Node: "b", Seconds: 7.5, Done: true}, {Node: "c", Seconds: -1}}
	r := SummariseFailovers(fs, 7*time.Second, 5*time.Second)
	if r.Kills != 3 || r.Done != 2 || r.P50s != 6.5 || r.MaxS != 7.5 || r.BoundS != 7 || r.LimitS != 12 {
		t.Fatalf("got %+v", r)
	}
}

func TestPlanFaultsCoversEveryKindDeterministically(t *testing.T) {
	o := DefaultOptions()
	o.Copierd, o.OutDir = "x", "y"
	o.Duration = 50 * time.Second
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	p1 := planFaults(o, rand.New(rand.NewPCG(7, 1)))
	p2 := planFaults(o, rand.New(rand.NewPCG(7, 1)))
	if len(p1) != len(p2) {
		t.Fatal("not deterministic")
	}
	kinds := map[string]bool{}
	for i := range p1 {
		if p1[i] != p2[i] {
			t.Fatalf("not deterministic at %d: %+v vs %+v", i, p1[i], p2[i])
		}
		kinds[string(p1[i].Kind)+p1[i].Variant] = true
		if p1[i].At < o.Warmup || p1[i].At > o.Duration {
			t.Fatalf("fault %d at %v outside the load", i, p1[i].At)
		}
		if p1[i].Kind == FaultFreeze && p1[i].Variant == "short" && p1[i].Hold >= o.Fence {
			t.Fatalf("short freeze %v not below the fence", p1[i].Hold)
		}
		if p1[i].Kind == FaultFreeze && p1[i].Variant == "long" && p1[i].Hold <= o.Fence {
			t.Fatalf("long freeze %v not above the fence", p1[i].Hold)
		}
	}
	for _, k := range []string{"kill", "freezeshort", "freezelong", "cut", "latency", "restart-db", "broker"} {
		if !kinds[k] {
			t.Errorf("kind %s missing from %v", k, kinds)
		}
	}
}

func TestParseFaults(t *testing.T) {
	if ks, err := ParseFaults("kill, cut,kill"); err != nil || len(ks) != 2 {
		t.Fatalf("%v %v", ks, err)
	}
	if ks, _ := ParseFaults("all"); len(ks) != 6 {
		t.Fatal(ks)
	}
	if ks, _ := ParseFaults("none"); ks != nil {
		t.Fatal(ks)
	}
	if _, err := ParseFaults("kill,nope"); err == nil {
		t.Fatal("accepted nope")
	}
}

func TestParseMetrics(t *testing.T) {
	text := `# HELP copier_owned_accounts x
copier_owned_accounts{node="node-1"} 42
copier_orders_total{node="node-1",result="ok"} 7
copier_orders_total{node="node-1",result="fenced"} 2
copier_dropped_work_total{node="node-1"} 3
copier_skips_total{node="node-1",reason="too_old"} 4
copier_skips_total{node="node-1",reason="filtered_side"} 0
copier_skips_total{node="node-1",reason="stop_passed"} 1
go_goroutines 99
`
	sc := parseMetrics(strings.NewReader(text))
	if sc.values["copier_owned_accounts"] != 42 || sc.values[`copier_orders_total{result="ok"}`] != 7 ||
		sc.values[`copier_orders_total{result="fenced"}`] != 2 || sc.values["copier_dropped_work_total"] != 3 || sc.values["go_goroutines"] != 99 {
		t.Fatalf("%v", sc.values)
	}
	skips := sc.skips()
	if len(skips) != 2 || skips["too_old"] != 4 || skips["stop_passed"] != 1 {
		t.Fatalf("skips %v, want too_old 4 and stop_passed 1", skips)
	}
	if got := skipsText(skips); got != "  skipped stop_passed 1, too_old 4" {
		t.Fatalf("node line's skips %q", got)
	}
	if got := skipsText(nil); got != "" {
		t.Fatalf("node line without skips: %q", got)
	}
}

// TestLateOrderAfterANewerClaimIsAnOverlap: node-1 (token 1) executes an order after
// node-2's claim (epoch 2) committed, before node-2 sent anything: the likeliest overlap,
// which comparing sending periods cannot see. Orders refused for their token or deadline
// after the claim are counted, not overlaps; an order inside a long freeze is explained.
func TestLateOrderAfterANewerClaimIsAnOverlap(t *testing.T) {
	b := newLog()
	b.open(1, "f1", "node-1", 1, 100, true, 0)
	b.open(12, "f1", "node-1", 1, 101, true, 0)                       // after node-2's claim at 10
	b.open(13, "f1", "node-1", 1, 102, false, broker.CodeExpired)     // refused by its deadline
	b.open(14, "f1", "node-1", 1, 103, false, broker.CodeFencedToken) // refused by its token
	b.open(30, "f1", "node-2", 2, 104, true, 0)                       // node-2's first order, much later
	b.open(2, "f2", "node-3", 4, 200, true, 0)                        // before any newer claim: fine
	b.open(21, "f2", "node-3", 4, 201, true, 0)                       // late, but inside node-3's long freeze
	claims := []Claim{
		{Follower: "f1", Node: "node-1", Epoch: 1, At: b.at(0)},
		{Follower: "f1", Node: "node-2", Epoch: 2, At: b.at(10)},
		{Follower: "f2", Node: "node-3", Epoch: 4, At: b.at(0)},
		{Follower: "f2", Node: "node-4", Epoch: 5, At: b.at(20)},
	}
	freeze := []Freeze{{Node: "node-3", Start: b.at(5), End: b.at(20)}}
	res := CheckOverlaps(OverlapInput{Orders: b.entries, Claims: claims, LongFreezes: freeze, Slack: 2 * time.Second})
	if res.LateOrders != 4 || res.LateRefused != 2 || res.LateExecuted != 2 || res.LateUnexplained != 1 {
		t.Fatalf("late orders %d, refused %d, executed %d, unexplained %d; want 4, 2, 2, 1: %+v",
			res.LateOrders, res.LateRefused, res.LateExecuted, res.LateUnexplained, res.Late)
	}
	var bad LateOrder
	for _, l := range res.Late {
		if !l.Explained {
			bad = l
		}
	}
	if bad.Follower != "f1" || bad.Node != "node-1" || bad.Claim.Node != "node-2" || !bad.At.Equal(b.at(12)) {
		t.Fatalf("unexplained late order %+v, want node-1's order on f1 at 12 s after node-2's claim", bad)
	}
}
