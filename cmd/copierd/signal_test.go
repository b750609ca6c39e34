package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

// TestBinaryReleasesLeasesOnSIGTERM builds the real copierd binary, runs a node, sends it
// SIGTERM and checks that it exits 0 within a few seconds with its leases released.
func TestBinaryReleasesLeasesOnSIGTERM(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "copierd")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	db := storetest.NewDB(t)
	ctx := context.Background()
	for _, id := range []int64{701, 702} {
		if err := store.CreateAccount(ctx, db.Pool, store.Account{ID: id, Platform: "sim", Role: store.RoleFollower, Enabled: true, Login: fmt.Sprintf("f%d", id)}); err != nil {
			t.Fatal(err)
		}
	}
	var logs bytes.Buffer
	cmd := exec.Command(bin, "run", "--database-url", db.URL, "--platform", "sim", "--broker", "sim",
		"--lease", "3s", "--fence", "1s", "--interval", "300ms", "--node-id", "sigterm-node")
	cmd.Env = append(os.Environ(), "COPIER_CONSOLE_TOKEN=")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	owned := func() int {
		rows, err := store.Leases(ctx, db.Pool, nil)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range rows {
			if r.NodeID == "sigterm-node" {
				n++
			}
		}
		return n
	}
	deadline := time.Now().Add(30 * time.Second)
	for owned() != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the node never owned both followers; log:\n%s", logs.String())
		}
		select {
		case err := <-exited:
			t.Fatalf("copierd exited early: %v\n%s", err, logs.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, logs.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("copierd did not exit within 15 s of SIGTERM\n%s", logs.String())
	}
	t.Logf("exited %v after SIGTERM", time.Since(sent).Round(time.Millisecond))
	if n := owned(); n != 0 {
		t.Fatalf("%d leases still held after a clean exit", n)
	}
	if !strings.Contains(logs.String(), "signalled") {
		t.Errorf("the log does not mention the signal:\n%s", logs.String())
	}
}
