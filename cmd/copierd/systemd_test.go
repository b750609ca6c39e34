package main

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snapcopier/copier/leasekeeper"
	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

// notifySocket is a fake systemd notify socket.
type notifySocket struct {
	c    *net.UnixConn
	path string
}

func newNotifySocket(t *testing.T) *notifySocket {
	t.Helper()
	dir, err := os.MkdirTemp("", "sd") // short: a socket path has at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "notify")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &notifySocket{c: c, path: path}
}

// next returns the next datagram, failing the test after within.
func (s *notifySocket) next(t *testing.T, within time.Duration) string {
	t.Helper()
	buf := make([]byte, 4096)
	if err := s.c.SetReadDeadline(time.Now().Add(within)); err != nil {
		t.Fatal(err)
	}
	n, err := s.c.Read(buf)
	if err != nil {
		t.Fatalf("no notification within %v: %v", within, err)
	}
	return string(buf[:n])
}

// waitFor reads datagrams until one has the line want, and returns every datagram read.
func (s *notifySocket) waitFor(t *testing.T, want string, within time.Duration) []string {
	t.Helper()
	deadline := time.Now().Add(within)
	var seen []string
	for {
		d := s.next(t, time.Until(deadline))
		seen = append(seen, d)
		if hasLine(d, want) {
			return seen
		}
	}
}

// drain returns every datagram already queued, without waiting (a non-blocking receive:
// a read deadline in the past would not even look).
func (s *notifySocket) drain(t *testing.T) []string {
	t.Helper()
	rc, err := s.c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	buf := make([]byte, 4096)
	for {
		var n int
		var rerr error
		if err := rc.Control(func(fd uintptr) { n, _, rerr = syscall.Recvfrom(int(fd), buf, syscall.MSG_DONTWAIT) }); err != nil {
			t.Fatal(err)
		}
		if errors.Is(rerr, syscall.EAGAIN) {
			return out
		}
		if rerr != nil {
			t.Fatal(rerr)
		}
		out = append(out, string(buf[:n]))
	}
}

func hasLine(datagram, line string) bool {
	for _, l := range strings.Split(datagram, "\n") {
		if l == line {
			return true
		}
	}
	return false
}

func countLine(datagrams []string, line string) int {
	n := 0
	for _, d := range datagrams {
		if hasLine(d, line) {
			n++
		}
	}
	return n
}

var cycleFailures = regexp.MustCompile(`(?m)^copier_lease_cycle_failures_total\{node="sd-node"\} (\d+)$`)

// TestSystemdNotify: under systemd the node sends READY=1 once, after its first successful
// lease cycle, then WATCHDOG=1 after every successful cycle; while its cycles fail (the
// lease rows locked away from it) it sends no WATCHDOG=1, so systemd's watchdog restarts
// it; it feeds the watchdog again when the cycles recover, and says STOPPING=1 on the
// signal.
func TestSystemdNotify(t *testing.T) {
	noLeaks(t)
	sock := newNotifySocket(t)
	t.Setenv("NOTIFY_SOCKET", sock.path)
	t.Setenv("WATCHDOG_USEC", "30000000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	db := storetest.NewDB(t)
	ctx := context.Background()
	if err := store.CreateAccount(ctx, db.Pool, store.Account{ID: 601, Platform: "sim", Role: store.RoleFollower, Enabled: true, Login: "f601"}); err != nil {
		t.Fatal(err)
	}
	b := startCLI(t, "run", "--database-url", db.URL, "--platform", "sim", "--broker", "sim", "--node-id", "sd-node",
		"--lease", "3s", "--fence", "1s", "--interval", "300ms", "--http", "127.0.0.1:0")

	start := sock.waitFor(t, "READY=1", 30*time.Second)
	if !hasLine(start[len(start)-1], "WATCHDOG=1") {
		t.Fatalf("READY=1 without WATCHDOG=1: %q", start)
	}
	if countLine(start, "WATCHDOG=1") != 1 {
		t.Fatalf("WATCHDOG=1 before READY=1: %q", start)
	}
	fed := sock.waitFor(t, "WATCHDOG=1", 30*time.Second) // fed again by the next cycle
	if countLine(fed, "READY=1") != 0 {
		t.Fatalf("READY=1 sent twice: %q", fed)
	}

	addr, ok := logField(b.stderr.String(), "http listening", "addr")
	if !ok {
		t.Fatalf("no 'http listening' line:\n%s", b.stderr.String())
	}
	failures := func() int {
		_, body, err := httpGet("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		m := cycleFailures.FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no copier_lease_cycle_failures_total in:\n%s", body)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	waitFailures := func(n int) {
		eventually(t, "failed lease cycles", 60*time.Second, func() string {
			if got := failures(); got < n {
				return strconv.Itoa(got) + " failed cycles, want " + strconv.Itoa(n)
			}
			return ""
		})
	}

	// Every cycle from now on waits for the locked rows until its deadline and fails.
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // rolled back below; this is for a failed test
	if _, err := tx.Exec(ctx, `LOCK TABLE trading_accounts IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	f0 := failures()
	waitFailures(f0 + 1)
	// The datagrams of cycles that succeeded before the lock were sent before the first
	// failure was counted (the report goes out in the cycle's own callback): drop them.
	sock.drain(t)
	waitFailures(f0 + 3)
	during := sock.drain(t)
	if n := countLine(during, "WATCHDOG=1"); n != 0 {
		t.Fatalf("watchdog fed %d times while the cycles failed: %q", n, during)
	}
	if len(during) == 0 || !strings.HasPrefix(during[0], "STATUS=lease cycle failing: ") {
		t.Fatalf("failing cycles not reported in STATUS: %q", during)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if after := sock.waitFor(t, "WATCHDOG=1", 30*time.Second); countLine(after, "READY=1") != 0 {
		t.Fatalf("READY=1 sent again after recovering: %q", after)
	}

	if code := b.stop(t, 30*time.Second); code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, b.stderr.String())
	}
	if rest := sock.drain(t); countLine(rest, "STOPPING=1") != 1 {
		t.Fatalf("STOPPING=1 not sent once on the signal: %q", rest)
	}
}

// TestRunRefusesAWatchdogAHealthyNodeMisses: a WatchdogSec= shorter than an interval plus
// a cycle deadline would kill healthy nodes; run refuses it (exit 2) before starting.
func TestRunRefusesAWatchdogAHealthyNodeMisses(t *testing.T) {
	sock := newNotifySocket(t)
	unsetEnv(t, "WATCHDOG_PID")
	env := map[string]string{"NOTIFY_SOCKET": sock.path, "WATCHDOG_USEC": "40000000"} // 40 s < 20 s + 33.75 s
	code, _, stderr := runCLI(t, env, "run", "--database-url", "postgres://u@127.0.0.1:1/db", "--platform", "sim", "--broker", "sim")
	if code != exitUsage || !strings.Contains(stderr, "WatchdogSec=") || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	need := leasekeeper.DefaultInterval + leasekeeper.DefaultConfig().CycleDeadline()
	if err := checkWatchdog(need+time.Millisecond, leasekeeper.DefaultConfig()); err != nil {
		t.Fatalf("a watchdog just above interval + deadline refused: %v", err)
	}
	if err := checkWatchdog(need, leasekeeper.DefaultConfig()); err == nil {
		t.Fatal("a watchdog of exactly interval + deadline accepted")
	}
}
