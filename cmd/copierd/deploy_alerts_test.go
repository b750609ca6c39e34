package main

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// TestAlertRules: promtool accepts deploy/prometheus/copierd-alerts.yml and its unit tests
// (copierd-alerts.test.yml: every alert fires when it should and not on its look-alike)
// pass. TestDeployExpressionsNameExposedMetrics checks the names against a running node.
func TestAlertRules(t *testing.T) {
	promtool := needTool(t, "promtool", "prometheus")
	dir := filepath.Join(repoRoot, "deploy", "prometheus")
	for _, args := range [][]string{
		{"check", "rules", "copierd-alerts.yml"},
		{"test", "rules", "copierd-alerts.test.yml"},
	} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("promtool %v: %v\n%s", args, err, out)
		}
	}
}
