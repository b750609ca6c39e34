package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/cmd/copierd/console"
	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

// configVersion reads an account's config_version.
func (e *env) configVersion(id int64) int64 {
	e.t.Helper()
	var v int64
	must(e.t, e.pool.QueryRow(ctxT(e.t), `SELECT config_version FROM trading_accounts WHERE id = $1`, id).Scan(&v))
	return v
}

// configSnapshot digests the configuration of every account and link (not the lease and
// status columns a running node writes).
func (e *env) configSnapshot() string {
	e.t.Helper()
	var a, l string
	must(e.t, e.pool.QueryRow(ctxT(e.t), `SELECT coalesce(md5(string_agg(concat_ws(',', id, role, platform, enabled, login, server, config_version), '|' ORDER BY id)), '') FROM trading_accounts`).Scan(&a))
	must(e.t, e.pool.QueryRow(ctxT(e.t), `SELECT coalesce(md5(string_agg(l::text, '|' ORDER BY id)), '') FROM copy_links l`).Scan(&l))
	return a + "/" + l
}

// TestActionBodiesAreChecked: enable, disable, drain and resume take no input; any body
// but none or {} is refused with 400 and changes nothing, and a no-op changes nothing.
func TestActionBodiesAreChecked(t *testing.T) {
	db := storetest.NewDB(t)
	srv := newSim()
	sealer := newSealer(t)
	ctx := ctxT(t)
	must(t, store.CreateAccount(ctx, db.Pool, store.Account{ID: 1, Platform: "sim", Role: store.RoleMaster, Enabled: true, Login: "m1"}))
	must(t, store.CreateAccount(ctx, db.Pool, store.Account{ID: 101, Platform: "sim", Role: store.RoleFollower, Enabled: true, Login: "f101"}))
	linkID, err := store.CreateLink(ctx, db.Pool, store.Link{MasterID: 1, FollowerID: 101, Enabled: true, Magic: 7101})
	must(t, err)
	node := startNode(t, db, srv, sealer, "node-a", 10)
	e := newEnvWith(t, db, withNode(node), func(o *console.Options) { o.Sealer = sealer })

	bad := []string{"xxx", `{"a":1}`, `[]`, `{} {}`, `null`, `{}}`, `"x"`}
	for _, path := range []string{"/api/node/drain", "/api/node/resume",
		"/api/accounts/101/enable", "/api/accounts/101/disable", "/api/links/" + fmtID(linkID) + "/enable", "/api/links/" + fmtID(linkID) + "/disable"} {
		for _, body := range bad {
			before := e.configSnapshot()
			if r := e.do("POST", path, rawBody(body), bearer); r.status != http.StatusBadRequest {
				t.Errorf("POST %s %q: %d %s, want 400", path, body, r.status, r.body)
			}
			if after := e.configSnapshot(); after != before {
				t.Errorf("POST %s %q changed the database", path, body)
			}
		}
	}
	var n nodeJSON
	e.do("GET", "/api/node", nil, bearer).json(t, &n)
	if n.State != "running" {
		t.Fatalf("after refused drains the node is %q", n.State)
	}

	// A no-op enable writes nothing: no version moves, so no owner reloads.
	before, cv := e.configSnapshot(), e.configVersion(101)
	for _, body := range []string{"", "{}", " {} "} {
		for _, path := range []string{"/api/links/" + fmtID(linkID) + "/enable", "/api/accounts/101/enable"} {
			if r := e.do("POST", path, rawBody(body), bearer); r.status != 200 {
				t.Fatalf("POST %s %q: %d %s", path, body, r.status, r.body)
			}
		}
	}
	if e.configSnapshot() != before || e.configVersion(101) != cv {
		t.Fatalf("a no-op enable changed the database (config_version %d → %d)", cv, e.configVersion(101))
	}
	// A PATCH that changes nothing writes nothing either.
	if r := e.do("PATCH", "/api/links/"+fmtID(linkID), rawBody(`{"enabled":true,"magic":7101,"settings":{}}`), bearer); r.status != 200 {
		t.Fatalf("no-op patch: %d %s", r.status, r.body)
	}
	if e.configSnapshot() != before {
		t.Fatal("a no-op PATCH changed the database")
	}
	// A real change still moves the version.
	if r := e.do("POST", "/api/links/"+fmtID(linkID)+"/disable", nil, bearer); r.status != 200 {
		t.Fatalf("disable: %d %s", r.status, r.body)
	}
	if e.configVersion(101) == cv {
		t.Fatal("disabling the link did not move the follower's config version")
	}
}

// TestDrainCanBeResumed: a drained node starts again from the console (no process
// restart) and claims accounts again.
func TestDrainCanBeResumed(t *testing.T) {
	db := storetest.NewDB(t)
	srv := newSim()
	sealer := newSealer(t)
	ctx := ctxT(t)
	must(t, store.CreateAccount(ctx, db.Pool, store.Account{ID: 101, Platform: "sim", Role: store.RoleFollower, Enabled: true, Login: "f101"}))
	node := startNode(t, db, srv, sealer, "node-a", 10)
	restart := func(context.Context) (*actors.Node, error) {
		return startNode(t, db, srv, sealer, "node-a", 10), nil
	}
	e := newEnvWith(t, db, withNode(node), func(o *console.Options) { o.Sealer = sealer; o.Restart = restart })

	var n nodeJSON
	eventually(t, "node owns the follower", 30*time.Second, func() (bool, string) {
		r := e.do("GET", "/api/node", nil, bearer)
		r.json(t, &n)
		return n.Owned == 1, r.body
	})
	if r := e.do("POST", "/api/node/drain", nil, bearer); r.status != 200 {
		t.Fatalf("drain: %d %s", r.status, r.body)
	}
	e.do("GET", "/api/node", nil, bearer).json(t, &n)
	if n.State != "stopped" {
		t.Fatalf("after drain: %q", n.State)
	}
	r := e.do("POST", "/api/node/resume", rawBody("{}"), bearer)
	if r.status != 200 {
		t.Fatalf("resume: %d %s", r.status, r.body)
	}
	r.json(t, &n)
	if n.State != "running" || !n.Claiming {
		t.Fatalf("after resume: %s", r.body)
	}
	eventually(t, "resumed node owns the follower again", 30*time.Second, func() (bool, string) {
		r := e.do("GET", "/api/node", nil, bearer)
		r.json(t, &n)
		return n.Owned == 1 && n.GateOpen, r.body
	})
	// Resuming a running node is a no-op.
	if r := e.do("POST", "/api/node/resume", nil, bearer); r.status != 200 {
		t.Fatalf("second resume: %d %s", r.status, r.body)
	}
}

// TestResumeWithoutRestartSaysSo: without Options.Restart a drain stays final and resume
// says how to rejoin.
func TestResumeWithoutRestartSaysSo(t *testing.T) {
	db := storetest.NewDB(t)
	node := startNode(t, db, newSim(), newSealer(t), "node-a", 1)
	e := newEnvWith(t, db, withNode(node))
	if r := e.do("POST", "/api/node/drain", nil, bearer); r.status != 200 {
		t.Fatalf("drain: %d %s", r.status, r.body)
	}
	r := e.do("POST", "/api/node/resume", nil, bearer)
	if msg, _ := r.apiErr(t); r.status != http.StatusConflict || !strings.Contains(msg, "restart the process") {
		t.Fatalf("resume: %d %s", r.status, r.body)
	}
}

// TestHostileInputIsRefused: NUL characters, invalid UTF-8, wrongly cased or repeated
// keys, trailing data, numbers JSON clients cannot read exactly and absurd settings get
// 400 or 422 naming the right field, and change nothing.
func TestHostileInputIsRefused(t *testing.T) {
	e := newEnv(t)
	e.seed(1, store.RoleMaster, "mt5", "m1")
	e.seed(2, store.RoleFollower, "mt5", "f2")

	cases := []struct {
		name, method, path, body string
		status                   int
		field                    string // in fields, or in the message for 400
	}{
		{"NUL in a symbol", "POST", "/api/links", `{"master_id":1,"follower_id":2,"magic":7,"settings":{"filters":{"include_symbols":["EUR\u0000USD"]}}}`, 422, "settings"},
		{"NUL in a settings key", "POST", "/api/links", `{"master_id":1,"follower_id":2,"magic":7,"settings":{"symbols":{"pairs":{"A\u0000":"B"}}}}`, 422, "settings"},
		{"NUL in an unknown key", "POST", "/api/links", `{"master_id":1,"follower_id":2,"magic":7,"settings":{"x\u0000":1}}`, 422, "settings"},
		{"lone surrogate in a symbol", "POST", "/api/links", `{"master_id":1,"follower_id":2,"magic":7,"settings":{"symbols":{"pairs":{"A":"\ud800"}}}}`, 422, "settings"},
		{"invalid UTF-8", "POST", "/api/links", "{\"master_id\":1,\"follower_id\":2,\"magic\":7,\"settings\":{\"filters\":{\"include_symbols\":[\"EUR\xffUSD\"]}}}", 400, "UTF-8"},
		{"invisible symbol", "POST", "/api/links", `{"master_id":1,"follower_id":2,"magic":7,"settings":{"filters":{"include_symbols":["EUR\u200bUSD"]}}}`, 422, "settings"},
		{"10,000-character symbol", "POST", "/api/links", `{"master_id":1,"follower_id":2,"magic":7,"settings":{"filters":{"include_symbols":["` + strings.Repeat("X", 10000) + `"]}}}`, 422, "settings"},
		{"fixed_lot 1e300", "POST", "/api/links", `{"master_id":1,"follower_id":2,"magic":7,"settings":{"sizing":{"mode":"fixed_lot","fixed_lot":1e300}}}`, 422, "settings"},
		{"multiplier 1e308", "POST", "/api/links", `{"master_id":1,"follower_id":2,"magic":7,"settings":{"sizing":{"multiplier":1e308}}}`, 422, "settings"},
		{"magic above 2^53", "POST", "/api/links", `{"master_id":1,"follower_id":2,"magic":9007199254740993}`, 422, "magic"},
		{"id above 2^53", "POST", "/api/accounts", `{"id":9007199254740993,"role":"master","platform":"mt5","login":"big"}`, 422, "id"},
		{"trailing brace", "POST", "/api/links", `{"master_id":1,"follower_id":2,"magic":7}}`, 400, "trailing"},
		{"trailing object", "POST", "/api/links", `{"master_id":1,"follower_id":2,"magic":7} {}`, 400, "trailing"},
		{"key case", "POST", "/api/links", `{"Master_ID":1,"follower_id":2,"magic":7}`, 400, "Master_ID"},
		{"settings key case", "POST", "/api/links", `{"master_id":1,"follower_id":2,"magic":7,"settings":{"Sizing":{}}}`, 422, "settings"},
		{"repeated key", "POST", "/api/links", `{"master_id":1,"follower_id":2,"magic":7,"magic":8}`, 400, "magic"},
		{"account key case", "POST", "/api/accounts", `{"ID":5,"role":"master","platform":"mt5","login":"x"}`, 400, "ID"},
		{"NUL in the search", "GET", "/api/accounts?q=%00", "", 400, "q"},
		{"invalid UTF-8 in the search", "GET", "/api/accounts?q=%ff", "", 400, "q"},
		{"NUL in the owner filter", "GET", "/api/accounts?owner=a%00b", "", 400, "owner"},
		{"NUL in the status filter", "GET", "/api/accounts?status=%00", "", 400, "status"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := e.snapshot()
			var r resp
			if c.method == "GET" {
				r = e.do("GET", c.path, nil, bearer)
			} else {
				r = e.do(c.method, c.path, rawBody(c.body), bearer)
			}
			if r.status != c.status {
				t.Fatalf("%d %s, want %d", r.status, r.body, c.status)
			}
			msg, fields := r.apiErr(t)
			if c.status == 422 {
				if _, ok := fields[c.field]; !ok || len(fields) != 1 {
					t.Fatalf("fields %v, want only %q (%s)", fields, c.field, msg)
				}
			} else if !strings.Contains(msg, c.field) {
				t.Fatalf("message %q does not name %q", msg, c.field)
			}
			if e.snapshot() != before {
				t.Fatal("a refused request changed the database")
			}
		})
	}
	if r := e.do("GET", "/api/accounts?q="+fmt.Sprint("f2"), nil, bearer); r.status != 200 {
		t.Fatalf("plain search: %d %s", r.status, r.body)
	}
}

// TestLogoutEndsTheSession: after logout the old cookie is refused, here and by another
// console process on the same database (it would otherwise work for 12 hours).
func TestLogoutEndsTheSession(t *testing.T) {
	e := newEnv(t)
	b := e.login()
	if r := b.get("/api/cluster"); r.status != 200 {
		t.Fatalf("logged in: %d", r.status)
	}
	u, _ := url.Parse(e.srv.URL)
	cookies := b.c.Jar.Cookies(u)
	if len(cookies) != 1 {
		t.Fatalf("cookies: %v", cookies)
	}
	old := cookies[0].Value
	if r := b.post("/logout", url.Values{"csrf": {b.csrf("/")}}); r.status != http.StatusSeeOther {
		t.Fatalf("logout: %d %s", r.status, r.body)
	}
	other := newEnvWith(t, e.db) // a second process serving the same console
	for _, srv := range []*env{e, other} {
		req, _ := http.NewRequestWithContext(ctxT(t), "GET", srv.url("/api/cluster"), nil)
		req.AddCookie(&http.Cookie{Name: "copier_session", Value: old})
		res, err := http.DefaultClient.Do(req)
		must(t, err)
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("old cookie after logout: %d, want 401", res.StatusCode)
		}
	}
	// A new login works.
	if r := e.login().get("/api/cluster"); r.status != 200 {
		t.Fatalf("login after logout: %d", r.status)
	}
}

// TestBearerGuessesAreThrottled: wrong bearer tokens count as failed logins.
func TestBearerGuessesAreThrottled(t *testing.T) {
	e := newEnv(t)
	for i := range 10 {
		if r := e.do("GET", "/api/cluster", nil, noAuth, "Authorization", "Bearer guess-guess-guess-"+fmt.Sprint(i)); r.status != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d", i, r.status)
		}
	}
	if r := e.do("GET", "/api/cluster", nil, bearer); r.status != http.StatusTooManyRequests {
		t.Fatalf("after 10 wrong tokens: %d, want 429", r.status)
	}
}

// TestSecureCookieBehindTrustedProxy: a login through a trusted TLS-terminating proxy
// gets a Secure cookie; the same header from anyone else does not.
func TestSecureCookieBehindTrustedProxy(t *testing.T) {
	for _, c := range []struct {
		name    string
		trusted []netip.Prefix
		proto   string
		secure  bool
	}{
		{"trusted https", []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, "https", true},
		{"trusted http", []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, "http", false},
		{"untrusted https", []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, "https", false},
		{"no proxies", nil, "https", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, func(o *console.Options) { o.TrustedProxies = c.trusted })
			req, _ := http.NewRequestWithContext(ctxT(t), "POST", e.url("/login"), strings.NewReader(url.Values{"token": {testToken}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("X-Forwarded-Proto", c.proto)
			client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			res, err := client.Do(req)
			must(t, err)
			res.Body.Close()
			cs := res.Cookies()
			if len(cs) != 1 || cs[0].Secure != c.secure {
				t.Fatalf("cookies %v, want Secure=%v", cs, c.secure)
			}
		})
	}
}

// TestThrottleBehindTrustedProxy: behind a trusted proxy, failed logins count against the
// client in X-Forwarded-For, so one guesser does not lock out every operator behind the
// same proxy (they all shared the proxy's address); the guesser itself is throttled.
func TestThrottleBehindTrustedProxy(t *testing.T) {
	e := newEnv(t, func(o *console.Options) { o.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")} })
	for i := range 10 {
		if r := e.do("GET", "/api/cluster", nil, noAuth, "Authorization", "Bearer guess-guess-guess-"+fmt.Sprint(i),
			"X-Forwarded-For", "203.0.113.5"); r.status != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d", i, r.status)
		}
	}
	if r := e.do("GET", "/api/cluster", nil, bearer, "X-Forwarded-For", "203.0.113.5"); r.status != http.StatusTooManyRequests {
		t.Fatalf("the guesser after 10 wrong tokens: %d, want 429", r.status)
	}
	if r := e.do("GET", "/api/cluster", nil, bearer, "X-Forwarded-For", "203.0.113.6"); r.status != http.StatusOK {
		t.Fatalf("another client behind the proxy: %d, want 200", r.status)
	}
	// A client's own X-Forwarded-For entries left of the proxy's are not believed.
	if r := e.do("GET", "/api/cluster", nil, bearer, "X-Forwarded-For", "198.51.100.1, 203.0.113.5"); r.status != http.StatusTooManyRequests {
		t.Fatalf("the guesser with a made-up hop: %d, want 429", r.status)
	}
}
