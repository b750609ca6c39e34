package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/internal/fixleaks"
	"github.com/snapcopier/copier/internal/testwait"
	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer.
func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// unsetEnv removes an environment variable for the test (restored afterwards).
func unsetEnv(t *testing.T, k string) {
	t.Helper()
	t.Setenv(k, "")
	if err := os.Unsetenv(k); err != nil {
		t.Fatal(err)
	}
}

// noLeaks fails the test if it leaves goroutines behind (checked after every other
// cleanup, so after the invocations have ended and the database is gone).
func noLeaks(t *testing.T) {
	t.Helper()
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		http.DefaultClient.CloseIdleConnections()
		// protoactor's dead-letter log throttle keeps a goroutine for one second after the
		// last dead letter (messages to actors that stopped during shutdown).
		// quickfixgo v0.9.7 leaves a few goroutines of a stopped FIX session blocked for
		// good (internal/fixleaks); FIX tests may start them.
		goleak.VerifyNone(t, append(fixleaks.Ignore(), before,
			goleak.IgnoreTopFunction("github.com/asynkron/protoactor-go/actor.NewDeadLetter.NewThrottle.func4.1"))...)
	})
}

// background is one copierd invocation running in a goroutine.
type background struct {
	cancel         context.CancelFunc
	done           chan int
	stdout, stderr *syncBuffer
}

// startCLI runs copierd args in the background until stop is called.
func startCLI(t *testing.T, args ...string) *background {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b := &background{cancel: cancel, done: make(chan int, 1), stdout: &syncBuffer{}, stderr: &syncBuffer{}}
	go func() { b.done <- dispatch(ctx, args, b.stdout, b.stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-b.done:
		case <-time.After(60 * time.Second):
			t.Errorf("copierd %s did not stop", args[0])
		}
	})
	return b
}

// stop cancels the invocation (as SIGTERM would) and returns its exit code.
func (b *background) stop(t *testing.T, within time.Duration) int {
	t.Helper()
	b.cancel()
	select {
	case code := <-b.done:
		b.done <- code // for the cleanup
		return code
	case <-time.After(within):
		t.Fatalf("not stopped within %v; stderr:\n%s", within, b.stderr.String())
		return -1
	}
}

// exited reports the exit code when the invocation has ended by itself.
func (b *background) exited() (int, bool) {
	select {
	case code := <-b.done:
		b.done <- code
		return code, true
	default:
		return 0, false
	}
}

// eventually polls cond every 20 ms until it returns "" or the deadline passes; cond
// returns what is still missing.
func eventually(t *testing.T, what string, within time.Duration, cond func() string) {
	t.Helper()
	testwait.For(t, what, within, func() (bool, string) {
		missing := cond()
		return missing == "", missing
	})
}

// logField returns the field of the first JSON log line with the given message.
func logField(logs, message, field string) (string, bool) {
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil || m["message"] != message {
			continue
		}
		v, ok := m[field].(string)
		return v, ok
	}
	return "", false
}

// httpGet returns the status and body of GET url.
func httpGet(url string) (int, string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// TestRunBadConfigExitsTwoWithOneLine: every configuration error of run is one line on
// stderr and exit 2, before the database is touched.
func TestRunBadConfigExitsTwoWithOneLine(t *testing.T) {
	// An unreachable database: a command that went on to connect would keep retrying
	// until the context ends and then exit 0, not 2.
	const url = "postgres://u@127.0.0.1:1/db"
	base := func(extra ...string) []string {
		return append([]string{"run", "--database-url", url, "--platform", "mt5", "--broker", "sim"}, extra...)
	}
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"no database url", []string{"run", "--platform", "mt5", "--broker", "sim"}, nil, "--database-url (or COPIER_DATABASE_URL) is required"},
		{"bad database url", []string{"run", "--database-url", "::::", "--platform", "mt5", "--broker", "sim"}, nil, "bad database URL"},
		{"no platform", []string{"run", "--database-url", url, "--broker", "sim"}, nil, "--platform (or COPIER_PLATFORM) is required"},
		{"platform with a space", base("--platform", "mt 5"), nil, `--platform "mt 5": use letters, digits`},
		{"platform with a slash", base("--platform", "mt5/x"), nil, `--platform "mt5/x"`},
		{"no broker", []string{"run", "--database-url", url, "--platform", "mt5"}, nil, "--broker (or COPIER_BROKER) is required"},
		{"unknown broker scheme", base("--broker", "ftp://h:1"), nil, `unknown scheme "ftp"`},
		{"broker word", base("--broker", "mt5"), nil, "not a broker address"},
		{"bridge without port", base("--broker", "bridge://host"), nil, "HOST:PORT is required"},
		{"bridge without host", base("--broker", "bridge://:7400"), nil, "HOST:PORT is required"},
		{"bridge with bad port", base("--broker", "bridge://h:99999"), nil, "port must be a number"},
		{"bridge with credentials", base("--broker", "bridge://u:secret@h:1"), nil, "--bridge-token"},
		{"fix without port", base("--broker", "fix://host"), nil, "HOST:PORT is required"},
		{"fix with unknown parameter", base("--broker", "fix+tls://h:1?sender=x"), nil, `unknown parameter "sender"`},
		{"bridge with a query", base("--broker", "bridge://h:1?target-comp-id=x"), nil, "unexpected path or query"},
		{"fix token for a bridge", base("--broker", "bridge://h:1", "--fix-token", "t"), nil, "--fix-token (or COPIER_FIX_TOKEN) is for a fix:// broker"},
		{"fence equals lease", base("--lease", "10s", "--fence", "10s"), nil, "fence (10s) must be shorter than lease (10s)"},
		{"fence above lease", base("--lease", "10s", "--fence", "20s"), nil, "must be shorter than lease"},
		{"interval too long", base("--lease", "60s", "--fence", "15s", "--interval", "50s"), nil, "interval (50s) must be shorter than lease − fence (45s)"},
		{"zero fence", base("--fence", "0s"), nil, "fence must be positive"},
		{"clock skew not inside the fence", base("--lease", "6s", "--fence", "2s", "--interval", "300ms", "--clock-skew", "2s"), nil, "fence (2s) must exceed clock skew (2s)"},
		{"negative capacity", base("--capacity", "-1"), nil, "capacity must be ≥ 0"},
		{"zero status every", base("--status-every", "0s"), nil, "--status-every must be positive"},
		{"negative ticket history", base("--ticket-history", "-1h"), nil, "ticket-history must be > 0"},
		{"bad node id", base("--node-id", "a b"), nil, `--node-id "a b"`},
		{"bad log format", base("--log-format", "xml"), nil, `--log-format "xml": want json or console`},
		{"bad log level", base("--log-level", "loud"), nil, `--log-level "loud"`},
		{"bad http address", base("--http", "nope"), nil, `--http "nope": want HOST:PORT`},
		{"bad lease in the environment", base(), map[string]string{"COPIER_LEASE": "soon"}, `COPIER_LEASE="soon"`},
		{"bad timing in the environment", base(), map[string]string{"COPIER_INTERVAL": "1m"}, "interval (1m0s) must be shorter"},
		{"stray argument", base("extra"), nil, `unexpected argument "extra"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, k := range []string{"COPIER_DATABASE_URL", "COPIER_PLATFORM", "COPIER_BROKER", "COPIER_LEASE", "COPIER_FENCE", "COPIER_INTERVAL"} {
				unsetEnv(t, k)
			}
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var out, errb bytes.Buffer
			code := dispatch(ctx, c.args, &out, &errb)
			msg := errb.String()
			if code != exitUsage {
				t.Fatalf("exit %d, want %d; stderr %q", code, exitUsage, msg)
			}
			if !strings.Contains(msg, c.want) {
				t.Fatalf("stderr %q does not contain %q", msg, c.want)
			}
			if strings.Count(msg, "\n") != 1 || !strings.HasPrefix(msg, "copierd run: ") {
				t.Fatalf("want one line starting with 'copierd run: ', got %q", msg)
			}
			if strings.Contains(msg, "secret") {
				t.Fatalf("the message repeats a secret: %q", msg)
			}
			if out.Len() != 0 {
				t.Fatalf("stdout: %q", out.String())
			}
		})
	}
}

// TestSimAndDemoBadConfig: sim and demo report bad flags the same way.
func TestSimAndDemoBadConfig(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"sim", "--listen", "nope"}, `--listen "nope"`},
		{[]string{"sim", "--requote-rate", "1.5"}, "--requote-rate 1.5: must be a probability"},
		{[]string{"sim", "--latency", "-1s"}, "--latency -1s: must not be negative"},
		{[]string{"sim"}, "--token (or COPIER_TOKEN) is required"},
		{[]string{"demo", "--nodes", "0"}, "--nodes 0: want 1 to 100"},
		{[]string{"demo", "--rate", "0"}, "--rate 0"},
		{[]string{"demo", "--lease", "2s", "--fence", "2s"}, "fence (2s) must be shorter than lease (2s)"},
		{[]string{"demo", "--database-url", "::::"}, "bad database URL"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			unsetEnv(t, "COPIER_DATABASE_URL")
			unsetEnv(t, "COPIER_TOKEN")
			code, out, msg := runCLI(t, nil, c.args...)
			if code != exitUsage || !strings.Contains(msg, c.want) || strings.Count(msg, "\n") != 1 || out != "" {
				t.Fatalf("exit %d stderr %q stdout %q; want %d and one line containing %q", code, msg, out, exitUsage, c.want)
			}
		})
	}
}

// TestHelpDocumentsEveryCommandAndFlag: help lists the commands and CMD -h every flag.
func TestHelpDocumentsEveryCommandAndFlag(t *testing.T) {
	code, out, _ := runCLI(t, nil, "help")
	for _, c := range []string{"run", "migrate", "sim", "demo", "stress", "healthcheck"} {
		if code != exitOK || !strings.Contains(out, "  "+c+" ") {
			t.Fatalf("help does not list %s: %q", c, out)
		}
	}
	flags := map[string][]string{
		"run": {"database-url", "platform", "broker", "bridge-token", "node-id", "capacity", "lease", "fence", "interval",
			"clock-skew", "http", "log-format", "log-level", "COPIER_BRIDGE_TOKEN", "fix-token", "COPIER_FIX_TOKEN", "ticket-history"},
		"sim": {"listen", "seed", "token", "requote-rate", "timeout-rate", "disconnect-rate", "drop-event-rate", "latency",
			"enforce-tokens", "dedup", "fix", "fix-comp-id", "fix-dialect"},
		"demo":        {"database-url", "nodes", "masters", "followers", "http", "duration"},
		"healthcheck": {"http", "path", "timeout", "COPIER_HTTP"},
		"stress":      {"database-url", "masters", "followers", "nodes", "rate", "duration", "faults", "seed", "enforce-tokens", "find-rate", "trace-copies"},
	}
	for cmd, names := range flags {
		code, _, errs := runCLI(t, nil, cmd, "-h")
		if code != exitOK {
			t.Fatalf("%s -h: exit %d", cmd, code)
		}
		for _, n := range names {
			if !strings.Contains(errs, n) {
				t.Errorf("%s -h does not document %s:\n%s", cmd, n, errs)
			}
		}
	}
}

// metricLine is one sample line of the Prometheus text format.
var metricLine = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\.)*",?)*\})? (\+Inf|-Inf|NaN|[-+0-9.eE]+)$`)

// checkMetrics fails unless body is well-formed Prometheus text with the wanted lines.
func checkMetrics(t *testing.T, body string, want ...string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
		if strings.HasPrefix(line, "# HELP ") || strings.HasPrefix(line, "# TYPE ") {
			continue
		}
		if !metricLine.MatchString(line) {
			t.Fatalf("malformed metrics line %q", line)
		}
	}
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Fatalf("metrics lack %q:\n%s", w, body)
		}
	}
}

// TestRunServesAndReleasesLeasesOnSignal: a node claims a follower, serves its HTTP
// endpoints, and on the signal exits 0 with its lease released.
func TestRunServesAndReleasesLeasesOnSignal(t *testing.T) {
	noLeaks(t)
	db := storetest.NewDB(t)
	ctx := context.Background()
	if err := store.CreateAccount(ctx, db.Pool, store.Account{ID: 501, Platform: "sim", Role: store.RoleFollower, Enabled: true, Login: "f501"}); err != nil {
		t.Fatal(err)
	}
	b := startCLI(t, "run", "--database-url", db.URL, "--platform", "sim", "--broker", "sim", "--node-id", "test-node",
		"--lease", "3s", "--fence", "1s", "--interval", "300ms", "--http", "127.0.0.1:0")

	var addr string
	eventually(t, "http listening", 20*time.Second, func() string {
		if code, done := b.exited(); done {
			t.Fatalf("exited with %d: %s", code, b.stderr.String())
		}
		var ok bool
		addr, ok = logField(b.stderr.String(), "http listening", "addr")
		if !ok {
			return "no 'http listening' log line"
		}
		return ""
	})
	if code, body, err := httpGet("http://" + addr + "/healthz"); err != nil || code != http.StatusOK {
		t.Fatalf("/healthz: %d %q %v", code, body, err)
	}
	eventually(t, "lease claimed", 20*time.Second, func() string {
		rows, err := store.Leases(ctx, db.Pool, []int64{501})
		if err != nil {
			return err.Error()
		}
		if len(rows) != 1 || rows[0].NodeID != "test-node" {
			return fmt.Sprintf("leases %+v", rows)
		}
		return ""
	})
	eventually(t, "/readyz 200", 10*time.Second, func() string {
		code, body, err := httpGet("http://" + addr + "/readyz")
		if err != nil || code != http.StatusOK {
			return fmt.Sprintf("%d %q %v", code, body, err)
		}
		return ""
	})
	eventually(t, "account owned in metrics", 10*time.Second, func() string {
		_, body, err := httpGet("http://" + addr + "/metrics")
		if err != nil {
			return err.Error()
		}
		if !strings.Contains(body, `copier_owned_accounts{node="test-node"} 1`) {
			return "owned accounts not 1"
		}
		checkMetrics(t, body, `copier_gate_open{node="test-node"} 1`, `copier_lease_cycle_duration_seconds_bucket{node="test-node",le="+Inf"}`,
			`copier_copy_latency_seconds_count{node="test-node"}`, `copier_orders_total{node="test-node",result="ok"}`,
			"# TYPE copier_copy_latency_seconds histogram", "# TYPE copier_orders_total counter", "copier_trust_remaining_seconds",
			`copier_copy_latency_part_seconds_count{node="test-node",part="feed"}`, `copier_copy_latency_part_seconds_count{node="test-node",part="broker"}`,
			`copier_copy_slippage_points_count{node="test-node"}`, `copier_stopouts_total{node="test-node"} 0`,
			`copier_reconciles_total{node="test-node",reason="protection"} 0`, `copier_skips_total{node="test-node",reason="stop_passed"} 0`,
			`copier_skips_total{node="test-node",reason="filtered_symbol"} 0`)
		return ""
	})
	if code, body, err := httpGet("http://" + addr + "/"); err != nil || code != http.StatusOK || !strings.Contains(body, "test-node") {
		t.Fatalf("status page: %d %v\n%s", code, err, body)
	}

	if code := b.stop(t, 30*time.Second); code != exitOK {
		t.Fatalf("exit %d after the signal; stderr:\n%s", code, b.stderr.String())
	}
	// A field twice in one JSON line is a line some log pipelines refuse or misread.
	named := 0
	for _, line := range strings.Split(b.stderr.String(), "\n") {
		if n := strings.Count(line, `"node":"test-node"`); n > 1 {
			t.Errorf("a log line names the node %d times: %s", n, line)
		} else {
			named += n
		}
	}
	if named == 0 {
		t.Error("no log line names the node")
	}
	rows, err := store.Leases(ctx, db.Pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.NodeID != "" || !r.LeaseUntil.IsZero() {
			t.Fatalf("lease not released: %+v", r)
		}
	}
	var free bool
	if err := db.Pool.QueryRow(ctx, `SELECT node_id IS NULL FROM trading_accounts WHERE id = 501`).Scan(&free); err != nil || !free {
		t.Fatalf("trading_accounts.node_id IS NULL: %v %v", free, err)
	}
	if _, _, err := httpGet("http://" + addr + "/healthz"); err == nil {
		t.Fatal("the HTTP server still answers after exit")
	}
}

// TestRunRetriesAnUnreachableDatabaseUntilSignalled: an unreachable database is retried
// with a log line per attempt until the signal, then exit 0.
func TestRunRetriesAnUnreachableDatabaseUntilSignalled(t *testing.T) {
	noLeaks(t)
	b := startCLI(t, "run", "--database-url", "postgres://u@127.0.0.1:1/db", "--platform", "sim", "--broker", "sim")
	eventually(t, "two logged attempts", 20*time.Second, func() string {
		if code, done := b.exited(); done {
			t.Fatalf("exited with %d: %s", code, b.stderr.String())
		}
		if strings.Count(b.stderr.String(), "database: not reachable, retrying") < 2 {
			return "fewer than two retry lines"
		}
		return ""
	})
	if code := b.stop(t, 10*time.Second); code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, b.stderr.String())
	}
	if strings.Contains(b.stderr.String(), "panic") {
		t.Fatalf("panic: %s", b.stderr.String())
	}
}

// TestRunOverBridgeToSim: a node copies through 'copierd sim' over the bridge; a wrong
// token is refused with exit 1.
func TestRunOverBridgeToSim(t *testing.T) {
	noLeaks(t)
	db := storetest.NewDB(t)
	ctx := context.Background()
	if err := store.CreateAccount(ctx, db.Pool, store.Account{ID: 601, Platform: "sim", Role: store.RoleFollower, Enabled: true, Login: "f601"}); err != nil {
		t.Fatal(err)
	}
	simCLI := startCLI(t, "sim", "--listen", "127.0.0.1:0", "--token", "s3cret", "--seed", "3")
	var addr string
	eventually(t, "sim listening", 20*time.Second, func() string {
		out := simCLI.stdout.String()
		if _, after, ok := strings.Cut(out, "sim listening on "); ok {
			addr, _, _ = strings.Cut(after, " ")
			return ""
		}
		return "no 'sim listening' line"
	})

	// A wrong token is refused at once: exit 1 with one line, without the token.
	code, _, errs := runCLI(t, nil, "run", "--database-url", db.URL, "--platform", "sim", "--broker", "bridge://"+addr,
		"--bridge-token", "wrong-token", "--log-level", "error")
	if code != exitFailure || strings.Count(errs, "\n") != 1 || strings.Contains(errs, "wrong-token") {
		t.Fatalf("wrong token: exit %d stderr %q", code, errs)
	}

	t.Setenv("COPIER_BRIDGE_TOKEN", "s3cret") // the token from the environment
	node := startCLI(t, "run", "--database-url", db.URL, "--platform", "sim", "--broker", "bridge://"+addr, "--node-id", "bridged",
		"--lease", "3s", "--fence", "1s", "--interval", "300ms", "--http", "127.0.0.1:0")
	var httpAddr string
	eventually(t, "http listening", 20*time.Second, func() string {
		var ok bool
		httpAddr, ok = logField(node.stderr.String(), "http listening", "addr")
		if !ok {
			return "no 'http listening' line"
		}
		return ""
	})
	eventually(t, "account copying over the bridge", 20*time.Second, func() string {
		if code, done := node.exited(); done {
			t.Fatalf("node exited with %d: %s", code, node.stderr.String())
		}
		_, body, err := httpGet("http://" + httpAddr + "/metrics")
		if err != nil {
			return err.Error()
		}
		if !strings.Contains(body, `copier_accounts{node="bridged",phase="copying"} 1`) {
			return "account not copying yet"
		}
		return ""
	})
	if code := node.stop(t, 30*time.Second); code != exitOK {
		t.Fatalf("node exit %d: %s", code, node.stderr.String())
	}
	if code := simCLI.stop(t, 10*time.Second); code != exitOK {
		t.Fatalf("sim exit %d: %s", code, simCLI.stderr.String())
	}
	if strings.Contains(node.stderr.String()+simCLI.stderr.String(), "s3cret") {
		t.Fatal("a log line holds the bridge token")
	}
	rows, err := store.Leases(ctx, db.Pool, nil)
	if err != nil || len(rows) != 1 || rows[0].NodeID != "" {
		t.Fatalf("leases after stop: %+v %v", rows, err)
	}
}

// TestDemoShortRun: a short demo on a test database ends in line and exits 0; its losing
// master stops out the follower that has a drawdown limit, whose copies are closed.
func TestDemoShortRun(t *testing.T) {
	noLeaks(t)
	db := storetest.NewDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	var out, errb syncBuffer
	code := dispatch(ctx, []string{"demo", "--database-url", db.URL, "--duration", "8s", "--followers", "20", "--masters", "2",
		"--nodes", "2", "--http", "127.0.0.1:0", "--progress", "1s", "--losing-after", "1s"}, &out, &errb)
	if code != exitOK {
		t.Fatalf("demo exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"console: http://127.0.0.1:", "created 2 masters and 20 followers", "the nodes own all 20 followers",
		"verdict: OK — all 20 followers", "follower 1000001 stopped out: max_drawdown", "1 follower(s) stopped out", "all 20 leases released"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("stdout lacks %q:\n%s", want, out.String())
		}
	}
}

// TestDemoRefusesANonEmptyDatabase: the demo never mixes its accounts with existing ones.
func TestDemoRefusesANonEmptyDatabase(t *testing.T) {
	db := storetest.NewDB(t)
	if err := store.CreateAccount(context.Background(), db.Pool, store.Account{ID: 9, Platform: "mt5", Role: store.RoleFollower, Enabled: true, Login: "x"}); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCLI(t, nil, "demo", "--database-url", db.URL, "--http", "", "--duration", "1s")
	if code != exitFailure || !strings.Contains(errs, "already holds 1 follower accounts") {
		t.Fatalf("exit %d stderr %q", code, errs)
	}
}

// TestMetricsWithoutNodes: the metrics of a process whose node has not started yet, with
// the standard Go and process collectors beside the engine's.
func TestMetricsWithoutNodes(t *testing.T) {
	rec := httptest.NewRecorder()
	metricsHandler(func() []*actors.Node { return nil }, nil).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	checkMetrics(t, rec.Body.String(), "copier_nodes 0", "go_goroutines ", "process_resident_memory_bytes ", "go_gc_duration_seconds")
}
