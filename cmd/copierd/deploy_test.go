package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repoRoot is the repository root, relative to this package.
const repoRoot = "../.."

// needTool returns the path of an external tool a deployment check runs; it fails the
// test (never skips it) when the tool is missing, naming the Debian package.
func needTool(t *testing.T, name, debianPackage string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is needed to check the deployment files and is not on PATH (Debian: apt-get install -y %s; .ci/run installs it)", name, debianPackage)
	}
	return p
}

// readRepoFile returns a file of the repository by its path from the root.
func readRepoFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// keyValues parses KEY=VALUE lines (systemd units and environment files): section →
// key → values in order ("" is the section before the first header). Comments and blank
// lines are skipped.
func keyValues(t *testing.T, text string) map[string]map[string][]string {
	t.Helper()
	out := map[string]map[string][]string{"": {}}
	section := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
			out[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				t.Fatalf("line %d: %q is not KEY=VALUE", n, line)
			}
			out[section][k] = append(out[section][k], v)
		}
	}
	return out
}
