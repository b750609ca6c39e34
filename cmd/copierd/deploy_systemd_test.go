package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snapcopier/copier/leasekeeper"
)

// TestSystemdUnitVerifies: systemd-analyze verify accepts deploy/systemd/copierd.service
// without a warning (an unknown or misspelt key is only a warning to systemd, so any
// output fails), with ExecStart pointed at a real executable, and its offline security
// analysis rates the hardening "OK" (exposure ≤ 2.0 of 10).
func TestSystemdUnitVerifies(t *testing.T) {
	analyze := needTool(t, "systemd-analyze", "systemd")
	unit := readRepoFile(t, "deploy/systemd/copierd.service")
	exe, err := os.Executable() // verify checks that ExecStart names an executable file
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(unit, "\nExecStart=/usr/local/bin/copierd run\n") {
		t.Fatal("ExecStart is not /usr/local/bin/copierd run")
	}
	path := filepath.Join(t.TempDir(), "copierd.service")
	if err := os.WriteFile(path, []byte(strings.Replace(unit, "\nExecStart=/usr/local/bin/copierd ", "\nExecStart="+exe+" ", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", "--man=no", path).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	out, err = exec.Command(analyze, "security", "--offline=yes", path).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`Overall exposure level for copierd.service: ([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no exposure level in:\n%s", out)
	}
	if level, _ := strconv.ParseFloat(string(m[1]), 64); level > 2.0 {
		t.Fatalf("exposure level %v > 2.0:\n%s", level, out)
	}
}

// TestSystemdUnitMatchesTheNode: the unit's timing agrees with the node's defaults
// (TimeoutStopSec above the shutdown budget; WatchdogSec accepted by checkWatchdog), it
// runs unprivileged as Type=notify, and the environment file example sets only variables
// of existing run flags.
func TestSystemdUnitMatchesTheNode(t *testing.T) {
	unit := keyValues(t, readRepoFile(t, "deploy/systemd/copierd.service"))
	svc := unit["Service"]
	one := func(k string) string {
		if len(svc[k]) != 1 {
			t.Fatalf("[Service] %s: %q, want one value", k, svc[k])
		}
		return svc[k][0]
	}
	for k, want := range map[string]string{"Type": "notify", "NotifyAccess": "main", "DynamicUser": "yes", "NoNewPrivileges": "yes",
		"KillSignal": "SIGTERM", "EnvironmentFile": "/etc/copierd/copierd.env"} {
		if got := one(k); got != want {
			t.Errorf("[Service] %s=%s, want %s", k, got, want)
		}
	}
	stop, err := time.ParseDuration(one("TimeoutStopSec"))
	if err != nil {
		t.Fatal(err)
	}
	if stop <= leasekeeper.DefaultShutdownTimeout {
		t.Errorf("TimeoutStopSec=%v must exceed the shutdown budget %v", stop, leasekeeper.DefaultShutdownTimeout)
	}
	wd, err := time.ParseDuration(one("WatchdogSec"))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkWatchdog(wd, leasekeeper.DefaultConfig()); err != nil {
		t.Error(err)
	}

	flags := runFlagNames(t)
	env := keyValues(t, readRepoFile(t, "deploy/systemd/copierd.env.example"))[""]
	for _, req := range []string{"COPIER_DATABASE_URL", "COPIER_PLATFORM", "COPIER_BROKER"} {
		if len(env[req]) == 0 {
			t.Errorf("the environment file example lacks %s", req)
		}
	}
	for k := range env {
		if !flags[k] {
			t.Errorf("the environment file example sets %s, which is no flag of copierd run", k)
		}
	}
	if d, err := time.ParseDuration(env["COPIER_SHUTDOWN_TIMEOUT"][0]); err != nil || d >= stop {
		t.Errorf("COPIER_SHUTDOWN_TIMEOUT=%v (%v) must be below TimeoutStopSec=%v", d, err, stop)
	}
}

// runFlagNames returns the environment names of copierd run's flags, read from its -h.
func runFlagNames(t *testing.T) map[string]bool {
	t.Helper()
	var help strings.Builder
	runRun(t.Context(), []string{"-h"}, io.Discard, &help)
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`\[(COPIER_[A-Z_]+)\]`).FindAllStringSubmatch(help.String(), -1) {
		names[m[1]] = true
	}
	if len(names) < 10 {
		t.Fatalf("found only %d flags in copierd run -h:\n%s", len(names), help.String())
	}
	return names
}
