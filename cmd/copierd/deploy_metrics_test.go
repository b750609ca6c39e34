package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

// exposed is what a scrape of /metrics offers: sample name (histograms with their _bucket,
// _sum and _count) → label name → the values seen.
type exposed map[string]map[string]map[string]bool

// parseExposition reads the Prometheus text format.
func parseExposition(t *testing.T, body string) exposed {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	out := exposed{}
	add := func(name string, m *dto.Metric, extra ...string) {
		if out[name] == nil {
			out[name] = map[string]map[string]bool{}
		}
		set := func(k, v string) {
			if out[name][k] == nil {
				out[name][k] = map[string]bool{}
			}
			out[name][k][v] = true
		}
		for _, l := range m.GetLabel() {
			set(l.GetName(), l.GetValue())
		}
		for i := 0; i+1 < len(extra); i += 2 {
			set(extra[i], extra[i+1])
		}
	}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			if f.GetType() != dto.MetricType_HISTOGRAM {
				add(name, m)
				continue
			}
			add(name+"_sum", m)
			add(name+"_count", m)
			for _, b := range m.GetHistogram().GetBucket() {
				add(name+"_bucket", m, "le", model.SampleValue(b.GetUpperBound()).String())
			}
			add(name+"_bucket", m, "le", "+Inf")
		}
	}
	return out
}

// deployExpression is one PromQL expression of the deployment files.
type deployExpression struct{ where, expr string }

// deployExpressions returns every expression of the alert rules and the dashboard, with the
// dashboard's variables replaced by what Grafana would send.
func deployExpressions(t *testing.T) []deployExpression {
	t.Helper()
	var out []deployExpression
	rules := readRepoFile(t, "deploy/prometheus/copierd-alerts.yml")
	for _, m := range regexp.MustCompile(`(?m)^\s+- alert: (\S+)\n\s+expr: (.+)$`).FindAllStringSubmatch(rules, -1) {
		out = append(out, deployExpression{"alert " + m[1], m[2]})
	}
	if n := strings.Count(rules, "- alert:"); len(out) != n || n == 0 {
		t.Fatalf("read %d alert expressions of %d alerts (each expr must be one line after its alert)", len(out), n)
	}
	var dash struct {
		Panels []struct {
			Type, Title string
			Targets     []struct{ Expr string }
		}
		Templating struct {
			List []struct {
				Name  string
				Query any
			}
		}
	}
	if err := json.Unmarshal([]byte(readRepoFile(t, "deploy/grafana/copierd-dashboard.json")), &dash); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	var rows []string
	for _, p := range dash.Panels {
		if p.Type == "row" {
			rows = append(rows, p.Title)
		}
	}
	for _, want := range []string{"Cluster", "Copy latency", "Slippage", "Orders", "Lease cycles", "Protections"} {
		if !slices.Contains(rows, want) {
			t.Errorf("the dashboard has no row %q (rows: %q)", want, rows)
		}
	}
	grafana := strings.NewReplacer("$__rate_interval", "5m", "$node", ".*")
	n := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			out = append(out, deployExpression{"panel " + p.Title, grafana.Replace(tg.Expr)})
			n++
		}
	}
	for _, v := range dash.Templating.List {
		if q, ok := v.Query.(map[string]any); ok {
			if m := regexp.MustCompile(`^label_values\((\w+), *(\w+)\)$`).FindStringSubmatch(fmt.Sprint(q["query"])); m != nil {
				out = append(out, deployExpression{"variable " + v.Name, m[1] + `{` + m[2] + `=~".+"}`})
			} else {
				t.Fatalf("variable %s: query %v is not label_values(metric, label)", v.Name, q["query"])
			}
		}
	}
	if n < 20 {
		t.Fatalf("only %d dashboard expressions", n)
	}
	return out
}

var (
	metricName = regexp.MustCompile(`\b((?:copier|go|process)_[a-zA-Z0-9_]+)(\{[^}]*\})?`)
	matcher    = regexp.MustCompile(`(\w+)\s*(=~|!=|!~|=)\s*"([^"]*)"`)
	grouping   = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)`)
)

// scrapeLabels are added by Prometheus to every scraped series.
var scrapeLabels = []string{"job", "instance"}

// checkExpression reports what e names that the scrape does not expose: metrics, label
// names, and values of equality matchers.
func checkExpression(e deployExpression, have exposed) []string {
	var bad []string
	labels := map[string]bool{"le": true}
	for _, l := range scrapeLabels {
		labels[l] = true
	}
	names := metricName.FindAllStringSubmatch(e.expr, -1)
	if len(names) == 0 && !strings.Contains(e.expr, "up{") {
		bad = append(bad, "names no copier metric")
	}
	for _, m := range names {
		got, ok := have[m[1]]
		if !ok {
			bad = append(bad, "metric "+m[1])
			continue
		}
		for l := range got {
			labels[l] = true
		}
		for _, mm := range matcher.FindAllStringSubmatch(m[2], -1) {
			if slices.Contains(scrapeLabels, mm[1]) {
				continue
			}
			if got[mm[1]] == nil {
				bad = append(bad, fmt.Sprintf("label %s of %s", mm[1], m[1]))
			} else if mm[2] == "=" && !got[mm[1]][mm[3]] {
				bad = append(bad, fmt.Sprintf("%s=%q of %s", mm[1], mm[3], m[1]))
			}
		}
		for _, alt := range regexp.MustCompile(`result=~"([^"]*)"`).FindAllStringSubmatch(m[2], -1) {
			for _, v := range strings.Split(alt[1], "|") {
				if !got["result"][v] {
					bad = append(bad, fmt.Sprintf("result %q of %s", v, m[1]))
				}
			}
		}
	}
	for _, g := range grouping.FindAllStringSubmatch(e.expr, -1) {
		for _, l := range strings.Split(g[1], ",") {
			if l = strings.TrimSpace(l); l != "" && !labels[l] {
				bad = append(bad, "grouping label "+l)
			}
		}
	}
	return bad
}

// TestDeployExpressionsNameExposedMetrics scrapes a running node's /metrics and fails if
// an alert rule, a dashboard panel or a dashboard variable names a metric, a label or a
// label value the node does not expose; promtool parses every dashboard expression. The
// node's copier_unowned_followers counts its platform's enabled followers it could not
// take (capacity 1 of 2; the disabled follower and the master do not count).
func TestDeployExpressionsNameExposedMetrics(t *testing.T) {
	noLeaks(t)
	promtool := needTool(t, "promtool", "prometheus")
	db := storetest.NewDB(t)
	ctx := context.Background()
	for _, a := range []store.Account{
		{ID: 701, Platform: "sim", Role: store.RoleFollower, Enabled: true, Login: "f701"},
		{ID: 702, Platform: "sim", Role: store.RoleFollower, Enabled: true, Login: "f702"},
		{ID: 703, Platform: "sim", Role: store.RoleFollower, Enabled: false, Login: "f703"},
		{ID: 704, Platform: "sim", Role: store.RoleMaster, Enabled: true, Login: "m704"},
		{ID: 705, Platform: "other", Role: store.RoleFollower, Enabled: true, Login: "f705"},
	} {
		if err := store.CreateAccount(ctx, db.Pool, a); err != nil {
			t.Fatal(err)
		}
	}
	b := startCLI(t, "run", "--database-url", db.URL, "--platform", "sim", "--broker", "sim", "--node-id", "dash-node",
		"--capacity", "1", "--lease", "3s", "--fence", "1s", "--interval", "300ms", "--http", "127.0.0.1:0")
	var body string
	eventually(t, "a node owning one account", 30*time.Second, func() string {
		if code, done := b.exited(); done {
			t.Fatalf("exited with %d: %s", code, b.stderr.String())
		}
		addr, ok := logField(b.stderr.String(), "http listening", "addr")
		if !ok {
			return "not listening yet"
		}
		_, got, err := httpGet("http://" + addr + "/metrics")
		if err != nil {
			return err.Error()
		}
		if !strings.Contains(got, `copier_owned_accounts{node="dash-node"} 1`) {
			return "owns no account yet"
		}
		body = got
		return ""
	})
	if !strings.Contains(body, `copier_unowned_followers{node="dash-node",platform="sim"} 1`) {
		t.Fatalf("copier_unowned_followers is not 1:\n%s", body)
	}
	have := parseExposition(t, body)
	exprs := deployExpressions(t)
	for _, e := range exprs {
		if bad := checkExpression(e, have); len(bad) > 0 {
			t.Errorf("%s: %s names what the node does not expose: %s", e.where, e.expr, strings.Join(bad, "; "))
		}
	}
	// The checker itself: a misspelt metric, label or value is caught.
	for _, e := range []string{`copier_lease_cycle_failure_total`, `copier_orders_total{result="refused"}`, `sum by (nod) (copier_nodes)`, `copier_accounts{stage="x"}`} {
		if len(checkExpression(deployExpression{"mutant", e}, have)) == 0 {
			t.Errorf("the checker accepts %s", e)
		}
	}

	// promtool parses the dashboard's expressions (as recording rules).
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, e := range exprs {
		if strings.HasPrefix(e.where, "panel ") {
			q, _ := json.Marshal(e.expr)
			fmt.Fprintf(&rules, "      - record: dashboard:expr_%d\n        expr: %s\n", i, q)
		}
	}
	path := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(path, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules on the dashboard's expressions: %v\n%s", err, out)
	}
}
