package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snapcopier/copier/internal/testwait"
	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

// childEnv makes the test binary run copierd instead of the tests: its value is the
// descriptor limit (RLIMIT_NOFILE) the child sets on itself first; the arguments are
// copierd's.
const childEnv = "COPIER_TEST_CHILD_NOFILE"

// childMain is copierd with a lowered descriptor limit.
func childMain() int {
	n, err := strconv.ParseUint(os.Getenv(childEnv), 10, 64)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", childEnv, err)
		return 2
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	rl.Cur = n
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr)
}

// TestLeaseCycleSurvivesHeldConnections: a node limited to 128 file descriptors keeps
// renewing its lease while an outsider holds 140 keep-alive connections to its public
// HTTP port (they once took every descriptor, and the lease cycle then failed with "too
// many open files"). The database connections are recycled every second, so every cycle
// needs a fresh socket.
func TestLeaseCycleSurvivesHeldConnections(t *testing.T) {
	db := storetest.NewDB(t)
	ctx := t.Context()
	if err := store.CreateAccount(ctx, db.Pool, store.Account{ID: 601, Platform: "sim", Role: store.RoleFollower, Enabled: true, Login: "f601"}); err != nil {
		t.Fatal(err)
	}
	sep := "?"
	if strings.Contains(db.URL, "?") {
		sep = "&"
	}
	url := db.URL + sep + "pool_max_conn_lifetime=1s&pool_max_conn_lifetime_jitter=0s"
	const lease = 10 * time.Second // 8 s of trust per cycle: room for a slow cycle on a loaded machine
	cmd := exec.Command(os.Args[0], "run", "--database-url", url, "--platform", "sim", "--broker", "sim", "--node-id", "fd-node",
		"--lease", lease.String(), "--fence", "2s", "--interval", "500ms", "--http", "127.0.0.1:0", "--log-level", "info")
	cmd.Env = append(os.Environ(), childEnv+"=128", "COPIER_CONSOLE_TOKEN=", "COPIER_CONSOLE_USER=", "COPIER_CONSOLE_PASSWORD=", "COPIER_SECRET_KEY=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	logs := &syncBuffer{}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			fmt.Fprintln(logs, sc.Text())
		}
	}()
	go func() { <-copied; exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("child did not stop")
		}
	})
	failed := func() (bool, string) {
		if strings.Contains(logs.String(), "lease cycle failed") {
			t.Fatalf("a lease cycle failed:\n%s", logs.String())
		}
		select {
		case err := <-exited:
			t.Fatalf("child exited: %v\n%s", err, logs.String())
		default:
		}
		return false, ""
	}

	var addr string
	testwait.For(t, "http listening", 30*time.Second, func() (bool, string) {
		failed()
		a, ok := logField(logs.String(), "http listening", "addr")
		addr = a
		return ok, "no 'http listening' line"
	})
	testwait.For(t, "lease claimed", 30*time.Second, func() (bool, string) {
		failed()
		rows, err := store.Leases(ctx, db.Pool, []int64{601})
		if err != nil {
			return false, err.Error()
		}
		return len(rows) == 1 && rows[0].NodeID == "fd-node", fmt.Sprintf("%+v", rows)
	})

	// Hold 140 keep-alive connections, each after one request.
	var held []net.Conn
	defer func() {
		for _, c := range held {
			_ = c.Close()
		}
	}()
	for i := range 140 {
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		held = append(held, c)
		if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	var t0 time.Time
	if err := db.Pool.QueryRow(ctx, `SELECT now()`).Scan(&t0); err != nil {
		t.Fatal(err)
	}
	// The lease keeps being renewed: renewals committed 3 s (six cycles) after every
	// connection was held. A failed cycle ends the wait at once.
	testwait.For(t, "lease renewed while the connections are held", 30*time.Second, func() (bool, string) {
		failed()
		rows, err := store.Leases(ctx, db.Pool, []int64{601})
		if err != nil {
			return false, err.Error()
		}
		if len(rows) != 1 || rows[0].NodeID != "fd-node" {
			t.Fatalf("lease lost: %+v", rows)
		}
		return !rows[0].LeaseUntil.Before(t0.Add(lease + 3*time.Second)), fmt.Sprintf("lease_until %v, t0 %v", rows[0].LeaseUntil, t0)
	})
	for _, c := range held {
		_ = c.Close()
	}
	held = nil

	// After the fact: the node's own counter saw no failure.
	var body string
	testwait.For(t, "/metrics answers", 30*time.Second, func() (bool, string) {
		failed()
		code, b, err := httpGet("http://" + addr + "/metrics")
		body = b
		return err == nil && code == 200, fmt.Sprintf("%d %v", code, err)
	})
	checkMetrics(t, body, `copier_lease_cycle_failures_total{node="fd-node"} 0`)
}
