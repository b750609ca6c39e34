package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
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

// TestAlertsAreDocumented: every alert has a section of its name in docs/operating.md
// (the rules carry a summary only; the meaning and the remedy are there).
func TestAlertsAreDocumented(t *testing.T) {
	doc := readRepoFile(t, "docs/operating.md")
	names := regexp.MustCompile(`(?m)^\s+- alert: (\S+)$`).FindAllStringSubmatch(readRepoFile(t, "deploy/prometheus/copierd-alerts.yml"), -1)
	if len(names) == 0 {
		t.Fatal("no alerts found")
	}
	for _, m := range names {
		if !strings.Contains(doc, "\n### "+m[1]+"\n") {
			t.Errorf("docs/operating.md has no section ### %s", m[1])
		}
	}
}
