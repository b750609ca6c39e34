package leasekeeper

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/store"
)

// TestKeeperCore runs the keeper core's scenarios (testdata/*.txt): each command is one
// input, and its output is the whole ready the core returned. The gates are real Gates on
// a fake clock, driven by the Keeper's own gate operations. After a change in the core,
// go test ./leasekeeper -run TestKeeperCore -rewrite rewrites the expected output; read
// the diff before committing it.
//
// Time is one virtual offset from the start (advance moves it): clock readings print as
// +offset on the keeper's clock, wall times as +offset on the wall clock.
//
//	new [capacity=N] [max-handoffs=N] [no-flusher]   a core for node n (keeperTiming)
//	tick [trigger=wake|lease-end]                    a cycle is due; the clock is read as it starts
//	done [elapsed=D] [owned=(id@epoch,...)] [claimed=N] [released=(id,...)] [share=N]
//	     [nodes=N] [pick=(id@epoch,...)] [next-expiry=D] [err=TEXT]
//	                                                 the cycle's result, elapsed after its start
//	advance D, fence id=N, wake, drain [off], halt, shutdown [in=D]
//	stopped [running=(id,...)] [held-back=(id@+D,...)] [err=TEXT]   answer to StopAccounts
//	some-stopped [held-back=(id@+D,...)] [err=TEXT]                  answer to StopSome
//	flushed for=shutdown|handoff [err=TEXT]
//	released [err=TEXT], handed-off [err=TEXT], release-held-back   the last such ask, answered
//	gates, state                                     print the gates / the core's state
func TestKeeperCore(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var h *coreHarness
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			if td.Cmd == "new" {
				h = newCoreHarness(t, td)
				return "ok"
			}
			if h == nil {
				t.Fatalf("%s: %s before new", td.Pos, td.Cmd)
			}
			return h.step(t, td)
		})
	})
}

type coreHarness struct {
	core      *core
	shell     *Keeper // its gates, and the gate operations that the actor carries out
	clk       *fakeClock
	t0, wall0 time.Time
	started   time.Time // the clock read as the last cycle began
	trigger   Trigger
	// The last asks of each kind, which answers without arguments answer.
	release  *releaseAsk
	handOff  *handOffAsk
	holdBack *holdBackAsk
}

func newCoreHarness(t *testing.T, td *datadriven.TestData) *coreHarness {
	clk := newFakeClock()
	cfg := coreConfig{Node: "n", Platform: "sim", Capacity: 10, Timing: keeperTiming, MaxHandOffs: DefaultMaxHandOffs,
		HandOffTimeout: DefaultHandOffTimeout, Flush: !td.HasArg("no-flusher")}
	td.MaybeScanArgs(t, "capacity", &cfg.Capacity)
	td.MaybeScanArgs(t, "max-handoffs", &cfg.MaxHandOffs)
	shell := &Keeper{cfg: KeeperConfig{Clock: clk, NodeGate: NewGate(clk), Logger: zerolog.Nop()}, gates: map[int64]*Gate{}}
	return &coreHarness{core: newCore(cfg), shell: shell, clk: clk, t0: clk.Now(), wall0: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (h *coreHarness) now() instant {
	at := h.clk.Now()
	return instant{Clock: at, Wall: h.wall0.Add(at.Sub(h.t0))}
}

func (h *coreHarness) step(t *testing.T, td *datadriven.TestData) string {
	var r ready
	switch td.Cmd {
	case "advance":
		h.clk.Advance(duration(t, td.CmdArgs[0].Key))
		return fmt.Sprintf("t=%s", h.clock(h.clk.Now()))
	case "tick":
		trigger := TriggerInterval
		if td.HasArg("trigger") {
			trigger = parseTrigger(t, argString(t, td, "trigger"))
		}
		r = h.core.tick(trigger)
	case "done":
		r = h.core.cycleDone(h.result(t, td), h.now())
	case "fence":
		var id int64
		td.ScanArgs(t, "id", &id)
		h.shell.gates[id].Fence()
		return "ok"
	case "wake":
		r = h.core.wake()
	case "drain":
		h.core.setDraining(!td.HasArg("off"))
		return "ok"
	case "halt":
		r = h.core.halt()
	case "shutdown":
		var deadline time.Time
		if td.HasArg("in") {
			deadline = h.now().Wall.Add(duration(t, argString(t, td, "in")))
		}
		r = h.core.shutdown(deadline, h.now())
	case "stopped":
		stopped := AccountsStopped{Running: ids(t, td, "running"), HeldBack: h.until(t, td)}
		r = h.core.accountsStopped(stopped, argErr(t, td), h.now())
	case "some-stopped":
		r = h.core.someStopped(SomeStopped{HeldBack: h.until(t, td)}, argErr(t, td), h.now())
	case "flushed":
		which := map[string]flushFor{"shutdown": flushShutdown, "handoff": flushHandOff}[argString(t, td, "for")]
		if which == 0 {
			t.Fatalf("%s: flushed for=shutdown|handoff", td.Pos)
		}
		r = h.core.flushed(which, argErr(t, td), h.now())
	case "released":
		if h.release == nil {
			t.Fatalf("%s: no release was asked for", td.Pos)
		}
		n, err := int64(len(h.release.Held)), argErr(t, td)
		if err != nil {
			n = 0
		}
		r = h.core.released(n, err)
	case "handed-off":
		if h.handOff == nil {
			t.Fatalf("%s: no hand-off release was asked for", td.Pos)
		}
		m := handedOff{held: h.handOff.Held, n: int64(len(h.handOff.Held)), err: argErr(t, td)}
		if m.err != nil {
			m.n = 0
		}
		r = h.core.handOffDone(m)
	case "release-held-back":
		if h.holdBack == nil {
			t.Fatalf("%s: nothing was held back", td.Pos)
		}
		r = h.core.releaseHeldBack(h.holdBack.Held)
	case "gates":
		return h.gates()
	case "state":
		return h.state()
	default:
		t.Fatalf("%s: unknown command %q", td.Pos, td.Cmd)
	}
	h.exec(r)
	return h.print(r)
}

// exec does what the Keeper does with a ready, as far as a scenario can see it: the gates
// change, and the clock is read as a cycle begins.
func (h *coreHarness) exec(r ready) {
	for _, op := range slices.Concat(r.Gates, r.HandOffGates) {
		h.shell.gate(op)
	}
	if r.Cycle != nil {
		h.started, h.trigger = h.clk.Now(), r.Cycle.Trigger
	}
	h.release = cmpOr(r.Release, h.release)
	h.handOff = cmpOr(r.HandOff, h.handOff)
	h.holdBack = cmpOr(r.HoldBack, h.holdBack)
}

func cmpOr[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

// result is the cycleDone of done's arguments; the clock advances by elapsed.
func (h *coreHarness) result(t *testing.T, td *datadriven.TestData) cycleDone {
	m := cycleDone{trigger: h.trigger, started: h.started, err: argErr(t, td)}
	if td.HasArg("elapsed") {
		m.elapsed = duration(t, argString(t, td, "elapsed"))
	}
	h.clk.Advance(m.elapsed)
	for _, o := range helds(t, td, "owned") {
		m.res.Owned = append(m.res.Owned, store.Owned{ID: o.ID, Epoch: o.Epoch})
	}
	td.MaybeScanArgs(t, "claimed", &m.res.Claimed)
	m.res.Renewed = len(m.res.Owned) - m.res.Claimed
	m.res.Released = ids(t, td, "released")
	td.MaybeScanArgs(t, "share", &m.res.Share)
	var nodes int
	td.MaybeScanArgs(t, "nodes", &nodes)
	for i := range nodes {
		m.res.View.Nodes = append(m.res.View.Nodes, store.NodeLoad{ID: fmt.Sprint("node", i), Capacity: 10})
	}
	m.res.HandOff = helds(t, td, "pick")
	if td.HasArg("next-expiry") {
		m.res.NextForeignExpiry = duration(t, argString(t, td, "next-expiry"))
	}
	m.fenced = h.shell.fencedGates()
	return m
}

// until reads held-back=(id@+D,...): until D after the start, on the keeper's clock.
func (h *coreHarness) until(t *testing.T, td *datadriven.TestData) map[int64]time.Time {
	arg, ok := td.Arg("held-back")
	if !ok {
		return nil
	}
	out := map[int64]time.Time{}
	for _, v := range arg.Vals {
		id, at, ok := strings.Cut(v, "@+")
		if !ok {
			t.Fatalf("%s: held-back wants id@+duration, got %q", td.Pos, v)
		}
		out[int64(atoi(t, id))] = h.t0.Add(duration(t, at))
	}
	return out
}

func (h *coreHarness) clock(at time.Time) string { return "+" + at.Sub(h.t0).String() }
func (h *coreHarness) wall(at time.Time) string  { return "+" + at.Sub(h.wall0).String() }

func (h *coreHarness) gates() string {
	var b strings.Builder
	show := func(name string, g *Gate) {
		switch until, open := g.TrustedUntil(); {
		case g.Fenced():
			fmt.Fprintf(&b, "%s: fenced\n", name)
		case !open:
			fmt.Fprintf(&b, "%s: closed\n", name)
		default:
			fmt.Fprintf(&b, "%s: until %s, %v left\n", name, h.clock(until), g.Remaining())
		}
	}
	for _, id := range slices.Sorted(maps.Keys(h.shell.gates)) {
		g := h.shell.gates[id]
		show(fmt.Sprintf("%d@%d", id, g.Epoch()), g)
	}
	show("node", h.shell.cfg.NodeGate)
	return b.String()
}

func (h *coreHarness) state() string {
	c := h.core
	var b strings.Builder
	fmt.Fprintf(&b, "held: %v\n", c.held)
	if len(c.handingOff) > 0 {
		fmt.Fprintf(&b, "handing off: %v\n", sortedHelds(c.handingOff))
	}
	if len(c.handedOff) > 0 {
		fmt.Fprintf(&b, "handed off: %v\n", sortedHelds(c.handedOff))
	}
	var flags []string
	for _, f := range []struct {
		on   bool
		name string
	}{{c.inFlight, "in-flight"}, {c.queued != nil, "queued"}, {c.wakeSet, "wake-set"}, {c.draining, "draining"}, {c.stopping, "stopping"}, {c.halted, "halted"}} {
		if f.on {
			flags = append(flags, f.name)
		}
	}
	if len(flags) > 0 {
		fmt.Fprintf(&b, "%s\n", strings.Join(flags, " "))
	}
	return b.String()
}

func sortedHelds(m map[int64]int64) []store.Held {
	var out []store.Held
	for _, id := range slices.Sorted(maps.Keys(m)) {
		out = append(out, store.Held{ID: id, Epoch: m[id]})
	}
	return out
}

// readyPrinters print every field of a ready, one line each (nothing when it is empty), in
// the order of the fields; TestReadyPrinterCoversEveryField keeps it complete.
var readyPrinters = []struct {
	field string
	print func(h *coreHarness, r ready) []string
}{
	{"Gates", func(h *coreHarness, r ready) []string { return h.printGates("gates", r.Gates) }},
	{"Owned", func(h *coreHarness, r ready) []string {
		if r.Owned == nil {
			return nil
		}
		var accs []string
		for _, a := range r.Owned.Accounts {
			accs = append(accs, fmt.Sprintf("%d@%d", a.ID, a.Epoch))
		}
		return []string{fmt.Sprintf("owned: [%s] trusted until %s", strings.Join(accs, " "), h.clock(r.Owned.TrustedUntil))}
	}},
	{"HandOffGates", func(h *coreHarness, r ready) []string { return h.printGates("hand-off gates", r.HandOffGates) }},
	{"StopTimers", func(_ *coreHarness, r ready) []string { return flag(r.StopTimers, "stop timers") }},
	{"CancelCycle", func(_ *coreHarness, r ready) []string { return flag(r.CancelCycle, "cancel the cycle in flight") }},
	{"SkipClaim", func(_ *coreHarness, r ready) []string {
		return flag(r.SkipClaim, "skip the claim of the cycle in flight")
	}},
	{"StopSome", func(_ *coreHarness, r ready) []string {
		if r.StopSome == nil {
			return nil
		}
		return []string{fmt.Sprintf("stop some: %v within %v", r.StopSome.IDs, r.StopSome.Timeout)}
	}},
	{"Notes", func(_ *coreHarness, r ready) []string {
		var out []string
		for _, n := range r.Notes {
			line := "log info: " + n.Msg
			if n.Warn {
				line = "log warn: " + n.Msg
			}
			if n.Err != nil {
				line += ": " + n.Err.Error()
			}
			for _, f := range n.Fields {
				line += fmt.Sprintf(" %s=%v", f.Key, f.Val)
			}
			out = append(out, line)
		}
		return out
	}},
	{"Report", func(h *coreHarness, r ready) []string {
		if r.Report == nil {
			return nil
		}
		p := r.Report
		line := fmt.Sprintf("report: %v started %s took %v owned=%d claimed=%d renewed=%d released=%d lost=%d share=%d live=%d handing-off=%d",
			p.Trigger, h.clock(p.Started), p.Duration, p.Owned, p.Claimed, p.Renewed, p.Released, p.Lost, p.Share, p.LiveNodes, p.HandingOff)
		if p.Err != nil {
			line += " err: " + p.Err.Error()
		}
		return []string{line}
	}},
	{"StopAccounts", func(h *coreHarness, r ready) []string {
		if r.StopAccounts == nil {
			return nil
		}
		return []string{fmt.Sprintf("stop accounts: by %s (wall), answer within %v", h.wall(r.StopAccounts.By), r.StopAccounts.Timeout)}
	}},
	{"Flush", func(_ *coreHarness, r ready) []string {
		if r.Flush == nil {
			return nil
		}
		which := map[flushFor]string{flushShutdown: "shutdown", flushHandOff: "handoff"}[r.Flush.For]
		return []string{fmt.Sprintf("flush for %s within %v", which, r.Flush.Timeout)}
	}},
	{"Release", func(h *coreHarness, r ready) []string {
		if r.Release == nil {
			return nil
		}
		return []string{fmt.Sprintf("release %v by %s (wall)", r.Release.Held, h.wall(r.Release.By))}
	}},
	{"HandOff", func(_ *coreHarness, r ready) []string {
		if r.HandOff == nil {
			return nil
		}
		return []string{fmt.Sprintf("release handed off %v within %v", r.HandOff.Held, r.HandOff.Timeout)}
	}},
	{"HoldBack", func(_ *coreHarness, r ready) []string {
		if r.HoldBack == nil {
			return nil
		}
		return []string{fmt.Sprintf("hold back %v: release-held-back in %v", r.HoldBack.Held, r.HoldBack.In)}
	}},
	{"LeaseEnd", func(h *coreHarness, r ready) []string {
		switch {
		case r.LeaseEnd == nil:
			return nil
		case r.LeaseEnd.Wait <= 0:
			return []string{"lease-end claim: none"}
		}
		return []string{fmt.Sprintf("lease-end claim: %v after %s", r.LeaseEnd.Wait, h.clock(r.LeaseEnd.Done))}
	}},
	{"Wake", func(_ *coreHarness, r ready) []string { return flag(r.Wake, "wake: a claim after a jitter") }},
	{"Cycle", func(_ *coreHarness, r ready) []string {
		if r.Cycle == nil {
			return nil
		}
		q := r.Cycle.Req
		line := fmt.Sprintf("cycle %v: held %v capacity=%d lease=%v deadline=%v", r.Cycle.Trigger, q.Held, q.Capacity, q.Lease, r.Cycle.Deadline)
		if q.NoClaim {
			line += " no-claim"
		}
		if q.Share != nil {
			line += " fair-share"
		}
		if q.HandOffs != nil {
			line += " hand-offs"
		}
		return []string{line}
	}},
	{"ShutdownDone", func(_ *coreHarness, r ready) []string {
		if r.ShutdownDone == nil {
			return nil
		}
		line := fmt.Sprintf("shutdown done: released %d", r.ShutdownDone.Released)
		if r.ShutdownDone.Err != nil {
			line += ", err: " + r.ShutdownDone.Err.Error()
		}
		return []string{line}
	}},
	{"HandedOff", func(_ *coreHarness, r ready) []string {
		if r.HandedOff == nil {
			return nil
		}
		return []string{fmt.Sprintf("handed off: %d released", *r.HandedOff)}
	}},
}

func (h *coreHarness) print(r ready) string {
	var lines []string
	for _, p := range readyPrinters {
		lines = append(lines, p.print(h, r)...)
	}
	if len(lines) == 0 {
		return "(nothing)"
	}
	return strings.Join(lines, "\n")
}

func (h *coreHarness) printGates(name string, ops []gateOp) []string {
	if len(ops) == 0 {
		return nil
	}
	var parts []string
	for _, op := range ops {
		who := fmt.Sprint(op.ID)
		if op.Node {
			who = "node"
		}
		switch op.Kind {
		case gateCreate:
			parts = append(parts, fmt.Sprintf("create %s@%d", who, op.Epoch))
		case gateConfirm:
			parts = append(parts, fmt.Sprintf("confirm %s until %s", who, h.clock(op.Lease.TrustedUntil())))
		case gateRevoke:
			parts = append(parts, "revoke "+who)
		case gateForget:
			parts = append(parts, "forget "+who)
		case gateFence:
			parts = append(parts, "fence "+who)
		default:
			parts = append(parts, fmt.Sprintf("op %d %s", op.Kind, who))
		}
	}
	return []string{name + ": " + strings.Join(parts, ", ")}
}

func flag(on bool, text string) []string {
	if on {
		return []string{text}
	}
	return nil
}

// TestReadyPrinterCoversEveryField: the scenarios print the whole ready, so a field added
// to it needs a printer, or its changes would pass unseen.
func TestReadyPrinterCoversEveryField(t *testing.T) {
	var fields, printed []string
	rt := reflect.TypeFor[ready]()
	for i := range rt.NumField() {
		fields = append(fields, rt.Field(i).Name)
	}
	for _, p := range readyPrinters {
		printed = append(printed, p.field)
	}
	if !slices.Equal(fields, printed) {
		t.Fatalf("ready has fields %v, the scenarios print %v", fields, printed)
	}
}

func parseTrigger(t *testing.T, s string) Trigger {
	for _, tr := range []Trigger{TriggerInterval, TriggerWake, TriggerLeaseEnd} {
		if tr.String() == s {
			return tr
		}
	}
	t.Fatalf("unknown trigger %q", s)
	return 0
}

func argString(t *testing.T, td *datadriven.TestData, key string) string {
	var s string
	td.ScanArgs(t, key, &s)
	return s
}

func argErr(t *testing.T, td *datadriven.TestData) error {
	if !td.HasArg("err") {
		return nil
	}
	return errors.New(argString(t, td, "err"))
}

func ids(t *testing.T, td *datadriven.TestData, key string) []int64 {
	arg, ok := td.Arg(key)
	if !ok {
		return nil
	}
	out := make([]int64, len(arg.Vals))
	for i, v := range arg.Vals {
		out[i] = int64(atoi(t, v))
	}
	return out
}

// helds reads key=(id@epoch,...).
func helds(t *testing.T, td *datadriven.TestData, key string) []store.Held {
	arg, ok := td.Arg(key)
	if !ok {
		return nil
	}
	var out []store.Held
	for _, v := range arg.Vals {
		id, ep, ok := strings.Cut(v, "@")
		if !ok {
			t.Fatalf("%s: %s wants id@epoch, got %q", td.Pos, key, v)
		}
		out = append(out, store.Held{ID: int64(atoi(t, id)), Epoch: int64(atoi(t, ep))})
	}
	return out
}

func atoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func duration(t *testing.T, s string) time.Duration {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		t.Fatal(err)
	}
	return d
}
