package console_test

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/snapcopier/copier/cmd/copierd/console"
	"github.com/snapcopier/copier/store"
)

func TestCheckBind(t *testing.T) {
	creds := console.Options{Token: testToken}
	for _, c := range []struct {
		addr string
		opts console.Options
		ok   bool
	}{
		{"127.0.0.1:8080", console.Options{}, true},
		{"127.1.2.3:0", console.Options{}, true},
		{"[::1]:8080", console.Options{}, true},
		{"localhost:8080", console.Options{}, true},
		{"app.localhost:8080", console.Options{}, false}, // /etc/hosts may send it anywhere
		{":8080", console.Options{}, false},
		{"0.0.0.0:8080", console.Options{}, false},
		{"[::]:8080", console.Options{}, false},
		{"10.1.2.3:8080", console.Options{}, false},
		{"example.com:8080", console.Options{}, false},
		{":8080", creds, true},
		{"0.0.0.0:8080", console.Options{User: "u", Password: "p"}, true},
		{"8080", console.Options{}, false},
	} {
		err := console.CheckBind(c.addr, c.opts)
		if (err == nil) != c.ok {
			t.Errorf("CheckBind(%q, creds=%v) = %v", c.addr, c.opts.Token != "" || c.opts.User != "", err)
		}
	}
	err := console.CheckBind("0.0.0.0:8080", console.Options{})
	if !errors.Is(err, console.ErrInsecureBind) || !strings.Contains(err.Error(), "127.0.0.1") || !strings.Contains(err.Error(), console.EnvToken) {
		t.Fatalf("message does not say how to fix it: %v", err)
	}
	if err := console.CheckBind("127.0.0.1:1", console.Options{User: "u"}); err == nil || !strings.Contains(err.Error(), console.EnvPassword) {
		t.Fatalf("user without password: %v", err)
	}
	if err := console.CheckBind("127.0.0.1:1", console.Options{Token: "short"}); err == nil || !strings.Contains(err.Error(), "16") {
		t.Fatalf("short token: %v", err)
	}
}

func TestNewValidatesOptions(t *testing.T) {
	if _, err := console.New(console.Options{}); err == nil {
		t.Fatal("New without a pool succeeded")
	}
	db := newEnv(t).pool
	for _, o := range []console.Options{
		{Pool: db, User: "u"},
		{Pool: db, Password: "p"},
		{Pool: db, User: "a:b", Password: "p"},
		{Pool: db, Token: "too-short"},
		{Pool: db, Token: "has white space in the middle"},
	} {
		if _, err := console.New(o); err == nil {
			t.Errorf("New(%+v) succeeded", o)
		}
	}
}

func TestAuthenticationAndCSRF(t *testing.T) {
	e := newEnv(t)
	e.seed(1, store.RoleFollower, "mt5", "f1")
	before := e.snapshot()

	// Reads need credentials too.
	if r := e.do("GET", "/api/accounts", nil, noAuth); r.status != http.StatusUnauthorized || !strings.Contains(r.header.Get("WWW-Authenticate"), "Bearer") {
		t.Fatalf("unauthenticated read: %d %v", r.status, r.header)
	}
	for _, a := range []auth{bearer, basic} {
		if r := e.do("GET", "/api/accounts", nil, a); r.status != http.StatusOK {
			t.Fatalf("auth %d read: %d %s", a, r.status, r.body)
		}
	}
	if r := e.do("GET", "/api/accounts", nil, noAuth, "Authorization", "Bearer wrong-token-0123456789"); r.status != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", r.status)
	}
	if r := e.do("GET", "/api/accounts", nil, noAuth, "Authorization", "Basic b3BlcmF0b3I6d3Jvbmc="); r.status != http.StatusUnauthorized {
		t.Fatalf("wrong password: %d", r.status)
	}

	// Every mutation refuses an unauthenticated request and changes nothing.
	mutations := []struct{ method, path, body string }{
		{"POST", "/api/accounts", `{"id":2,"role":"master","platform":"mt5","login":"m2"}`},
		{"PATCH", "/api/accounts/1", `{"login":"changed"}`},
		{"POST", "/api/accounts/1/disable", ``},
		{"POST", "/api/accounts/1/enable", ``},
		{"POST", "/api/links", `{"master_id":2,"follower_id":1,"magic":5}`},
		{"PATCH", "/api/links/1", `{"magic":9}`},
		{"POST", "/api/links/1/disable", ``},
		{"POST", "/api/links/1/enable", ``},
		{"POST", "/api/node/claiming", `{"claiming":false}`},
		{"POST", "/api/node/drain", ``},
		{"POST", "/accounts/new", `id=2`},
		{"POST", "/accounts/1/disable", ``},
		{"POST", "/links/new", ``},
		{"POST", "/node/drain", ``},
	}
	// Wrong tokens go to a second console on the same database: after ten of them its
	// address is throttled (429), which would lock this test's client out of e as well.
	guessed := newEnvWith(t, e.db)
	for _, m := range mutations {
		r := e.do(m.method, m.path, rawBody(m.body), noAuth)
		if r.status != http.StatusUnauthorized {
			t.Errorf("%s %s without credentials: %d, want 401", m.method, m.path, r.status)
		}
		r = guessed.do(m.method, m.path, rawBody(m.body), noAuth, "Authorization", "Bearer not-the-token-000000")
		if r.status != http.StatusUnauthorized && r.status != http.StatusTooManyRequests {
			t.Errorf("%s %s with a wrong token: %d, want 401 (or 429 once throttled)", m.method, m.path, r.status)
		}
	}
	if after := e.snapshot(); after != before {
		t.Fatal("a refused mutation changed the database")
	}

	// Cross-origin browser requests are refused even with valid credentials (a browser
	// would attach basic credentials by itself).
	r := e.do("POST", "/api/accounts/1/disable", nil, basic, "Sec-Fetch-Site", "cross-site")
	if r.status != http.StatusForbidden || !strings.Contains(r.body, "cross-origin") {
		t.Fatalf("cross-site: %d %s", r.status, r.body)
	}
	r = e.do("POST", "/api/accounts/1/disable", nil, basic, "Origin", "https://evil.example")
	if r.status != http.StatusForbidden {
		t.Fatalf("foreign origin: %d %s", r.status, r.body)
	}
	// API mutations must be JSON: a cross-site HTML form cannot send that.
	r = e.do("POST", "/api/accounts/1/disable", rawBody("x=1"), basic, "Content-Type", "application/x-www-form-urlencoded")
	if r.status != http.StatusUnsupportedMediaType || !strings.Contains(r.body, "application/json") {
		t.Fatalf("form-encoded API call: %d %s", r.status, r.body)
	}
	r = e.do("POST", "/api/accounts/1/disable", nil, bearer, "Content-Type", "text/plain")
	if r.status != http.StatusUnsupportedMediaType {
		t.Fatalf("text/plain API call: %d", r.status)
	}
	// Page forms need the form token.
	r = e.do("POST", "/accounts/1/disable", rawBody("back=%2F"), basic, "Content-Type", "application/x-www-form-urlencoded")
	if r.status != http.StatusForbidden || !strings.Contains(r.body, "security token") {
		t.Fatalf("form without token: %d %s", r.status, r.body)
	}
	if after := e.snapshot(); after != before {
		t.Fatal("a refused mutation changed the database")
	}

	// Pages send browsers to the login form; the session cookie then works, with the form
	// token for posts.
	r = e.do("GET", "/accounts?q=f", nil, noAuth)
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/login?next="+url.QueryEscape("/accounts?q=f") {
		t.Fatalf("page without session: %d %s", r.status, r.header.Get("Location"))
	}
	if r := e.do("GET", "/static/console.js", nil, noAuth); r.status != http.StatusOK {
		t.Fatalf("static asset: %d", r.status)
	}
	b := e.login()
	if r := b.get("/accounts"); r.status != http.StatusOK || !strings.Contains(r.body, "f1") {
		t.Fatalf("accounts page with session: %d", r.status)
	}
	if r := b.post("/accounts/1/disable", url.Values{"csrf": {"forged"}}); r.status != http.StatusForbidden {
		t.Fatalf("forged form token: %d", r.status)
	}
	if r := b.post("/accounts/1/disable", url.Values{"csrf": {b.csrf("/accounts/1")}}); r.status != http.StatusSeeOther {
		t.Fatalf("form with token: %d %s", r.status, r.body)
	}
	if e.account(1).Enabled {
		t.Fatal("form post did not disable the account")
	}
	// A session cookie is not a bearer token, and a tampered one is refused.
	r = e.do("GET", "/api/accounts", nil, noAuth, "Cookie", "copier_session=v1.9999999999.AAAA.b3BlcmF0b3I.forged")
	if r.status != http.StatusUnauthorized {
		t.Fatalf("forged session: %d", r.status)
	}
	// The login form: a wrong token is refused and not repeated back.
	res, err := http.PostForm(e.url("/login"), url.Values{"token": {"wrong-token-guess-1234"}})
	must(t, err)
	body := readAll(t, res)
	if res.StatusCode != http.StatusUnauthorized || strings.Contains(body, "wrong-token-guess-1234") {
		t.Fatalf("bad login: %d", res.StatusCode)
	}
	// Logging in as user and password also works; a foreign next is ignored.
	res, err = noRedirect().PostForm(e.url("/login"), url.Values{"user": {testUser}, "password": {testPassword}, "next": {"//evil.example/x"}})
	must(t, err)
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/" {
		t.Fatalf("basic login: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	// Security headers.
	r = e.do("GET", "/api/cluster", nil, bearer)
	if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || r.header.Get("X-Frame-Options") != "DENY" {
		t.Fatalf("headers: %v", r.header)
	}
}

func TestLoginThrottling(t *testing.T) {
	e := newEnv(t)
	for i := 0; i < 10; i++ {
		res, err := http.PostForm(e.url("/login"), url.Values{"token": {"guess-guess-guess-guess"}})
		must(t, err)
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("attempt %d: %d", i, res.StatusCode)
		}
	}
	res, err := http.PostForm(e.url("/login"), url.Values{"token": {testToken}})
	must(t, err)
	res.Body.Close()
	if res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("after 10 failures: %d, want 429", res.StatusCode)
	}
}

func TestReadOnlyWithoutCredentials(t *testing.T) {
	e := newEnv(t, withoutCredentials())
	e.seed(1, store.RoleFollower, "mt5", "f1")
	before := e.snapshot()
	if r := e.do("GET", "/api/accounts", nil, noAuth); r.status != http.StatusOK {
		t.Fatalf("loopback read: %d", r.status)
	}
	if r := e.do("GET", "/accounts", nil, noAuth); r.status != http.StatusOK || !strings.Contains(r.body, "Read-only") || strings.Contains(r.body, `data-action="disable"`) {
		t.Fatalf("page: %d", r.status)
	}
	for _, p := range []string{"/api/accounts/1/disable", "/accounts/1/disable"} {
		r := e.do("POST", p, nil, noAuth)
		if r.status != http.StatusForbidden || !strings.Contains(r.body, console.EnvToken) {
			t.Fatalf("mutation without credentials configured: %d %s", r.status, r.body)
		}
	}
	// A page of another site reaching the console by DNS rebinding names another host.
	if r := e.do("GET", "/api/accounts", nil, noAuth, "Host", "attacker.example"); r.status != http.StatusForbidden {
		t.Fatalf("foreign Host: %d", r.status)
	}
	if e.snapshot() != before {
		t.Fatal("database changed")
	}
}

func readAll(t *testing.T, res *http.Response) string {
	t.Helper()
	defer res.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := res.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return b.String()
}

func noRedirect() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
