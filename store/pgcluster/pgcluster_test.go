package pgcluster

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/snapcopier/copier/internal/testwait"
)

// TestWatchdogStopsTheServerWhenItsOwnerDies: a process that started a cluster is killed
// without a chance to stop it (as go test kills a binary at its timeout); the server stops
// by itself instead of running on.
func TestWatchdogStopsTheServerWhenItsOwnerDies(t *testing.T) {
	if os.Getenv("PGCLUSTER_TEST_OWNER") == "1" {
		c, err := Start(context.Background(), Options{})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(c.Addr(), c.Dir())
		select {} // killed by the parent
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestWatchdogStopsTheServerWhenItsOwnerDies$")
	cmd.Env = append(os.Environ(), "PGCLUSTER_TEST_OWNER=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var addr, dir string
	line, err := bufio.NewReader(out).ReadString('\n')
	if _, serr := fmt.Sscan(line, &addr, &dir); err != nil || serr != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("owner said %q (%v)", line, err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("the server does not answer while its owner lives: %v", err)
	}
	conn.Close()

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	testwait.For(t, "the server stopped after its owner died", 60*time.Second, func() (bool, string) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return true, ""
		}
		c.Close()
		return false, addr + " still accepts connections"
	})
	testwait.For(t, "the cluster's files removed", 30*time.Second, func() (bool, string) {
		_, err := os.Stat(dir)
		return os.IsNotExist(err), fmt.Sprintf("%s: %v", dir, err)
	})
}

// TestPreloadLeavesOutWhatTheServerLacks: a preloaded library the server has is loaded
// (the stress run's pg_stat_statements); one it lacks is left out instead of failing the
// start, and Preloaded tells them apart.
func TestPreloadLeavesOutWhatTheServerLacks(t *testing.T) {
	ctx := context.Background()
	c, err := Start(ctx, Options{Preload: []string{"pg_stat_statements", "no_such_library"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Stop() }()
	if !c.Preloaded("pg_stat_statements") || c.Preloaded("no_such_library") {
		t.Fatalf("preloaded %v: want pg_stat_statements only", c.preloaded)
	}
	out, err := c.run(ctx, "psql", "-X", "-At", "-d", c.URL("postgres"), "-c", "SHOW shared_preload_libraries")
	if err != nil || strings.TrimSpace(out) != "pg_stat_statements" {
		t.Fatalf("shared_preload_libraries = %q (%v), want pg_stat_statements", out, err)
	}
}
