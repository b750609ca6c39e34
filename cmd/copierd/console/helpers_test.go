package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/cmd/copierd/console"
	"github.com/snapcopier/copier/internal/testwait"
	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/secrets"
	"github.com/snapcopier/copier/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

const (
	testToken    = "test-token-0123456789abcdef"
	testUser     = "operator"
	testPassword = "operator-password-xyz"
)

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// env is one console under test: a database, a sealer, the console on an httptest server.
type env struct {
	t      *testing.T
	db     *storetest.DB
	pool   *pgxpool.Pool
	sealer *secrets.Sealer
	srv    *httptest.Server
	logs   *syncBuffer
	con    *console.Server
}

// envOption changes the console's options before New.
type envOption func(*console.Options)

func withNode(n *actors.Node) envOption         { return func(o *console.Options) { o.Node = n } }
func withControl(c broker.Controller) envOption { return func(o *console.Options) { o.Control = c } }
func withoutSealer() envOption                  { return func(o *console.Options) { o.Sealer = nil } }

func withoutCredentials() envOption {
	return func(o *console.Options) { o.Token, o.User, o.Password = "", "", "" }
}

func newSealer(t *testing.T) *secrets.Sealer {
	t.Helper()
	key, err := secrets.GenerateKey()
	must(t, err)
	s, err := secrets.NewSealer(key)
	must(t, err)
	return s
}

func ctxT(t *testing.T) context.Context { return t.Context() }

func jsonBody(v any) io.Reader {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return bytes.NewReader(b)
}

func rawBody(s string) io.Reader { return strings.NewReader(s) }

func (e *env) url(path string) string { return e.srv.URL + path }

func (e *env) account(id int64) store.AccountRow {
	e.t.Helper()
	a, err := store.GetAccountRow(ctxT(e.t), e.pool, id)
	must(e.t, err)
	return a
}

func (e *env) link(id int64) store.LinkRow {
	e.t.Helper()
	l, err := store.GetLinkRow(ctxT(e.t), e.pool, id)
	must(e.t, err)
	return l
}

// credentials reads an account's stored (sealed) credentials.
func (e *env) credentials(id int64) []byte {
	e.t.Helper()
	var c []byte
	must(e.t, e.pool.QueryRow(ctxT(e.t), `SELECT credentials FROM trading_accounts WHERE id = $1`, id).Scan(&c))
	return c
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// newEnv starts a console with a token, basic credentials and a sealer (unless options say
// otherwise) on a fresh database.
func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	return newEnvWith(t, nil, opts...)
}

func newEnvWith(t *testing.T, db *storetest.DB, opts ...envOption) *env {
	t.Helper()
	if db == nil {
		db = storetest.NewDB(t)
	}
	e := &env{t: t, db: db, pool: db.Pool, sealer: newSealer(t), logs: &syncBuffer{}}
	o := console.Options{Pool: db.Pool, Sealer: e.sealer, Token: testToken, User: testUser, Password: testPassword,
		Logger: zerolog.New(e.logs).Level(zerolog.DebugLevel)}
	for _, f := range opts {
		f(&o)
	}
	e.sealer = o.Sealer
	e.pool = o.Pool
	con, err := console.New(o)
	must(t, err)
	e.con = con
	e.srv = httptest.NewServer(con.Handler())
	t.Cleanup(e.srv.Close)
	return e
}

// seed inserts accounts directly (id, role, platform, login).
func (e *env) seed(id int64, role store.Role, platform, login string) {
	e.t.Helper()
	must(e.t, store.CreateAccount(ctxT(e.t), e.pool, store.Account{ID: id, Role: role, Platform: platform, Login: login, Enabled: true}))
}

// resp is an HTTP answer.
type resp struct {
	status int
	header http.Header
	body   string
}

func (r resp) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.body), v); err != nil {
		t.Fatalf("decode %q: %v", r.body, err)
	}
}

// errorBody decodes an API error.
func (r resp) apiErr(t *testing.T) (msg string, fields map[string]string) {
	t.Helper()
	var b struct {
		Error  string            `json:"error"`
		Fields map[string]string `json:"fields"`
	}
	r.json(t, &b)
	if b.Error == "" {
		t.Fatalf("error body without a message: %s", r.body)
	}
	return b.Error, b.Fields
}

// auth modes of do.
type auth int

const (
	noAuth auth = iota
	bearer
	basic
)

// do sends a request. For mutations with a body it sets Content-Type: application/json.
func (e *env) do(method, path string, body io.Reader, a auth, headers ...string) resp {
	e.t.Helper()
	req, err := http.NewRequestWithContext(ctxT(e.t), method, e.url(path), body)
	must(e.t, err)
	switch a {
	case bearer:
		req.Header.Set("Authorization", "Bearer "+testToken)
	case basic:
		req.SetBasicAuth(testUser, testPassword)
	}
	if method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1]
			continue
		}
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 30 * time.Second}
	res, err := client.Do(req)
	must(e.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	must(e.t, err)
	return resp{status: res.StatusCode, header: res.Header, body: string(b)}
}

// browserClient is a cookie-keeping client that logged in through /login.
type browserClient struct {
	e *env
	c *http.Client
}

func (e *env) login() *browserClient {
	e.t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.PostForm(e.url("/login"), url.Values{"token": {testToken}, "next": {"/accounts"}})
	must(e.t, err)
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/accounts" {
		e.t.Fatalf("login: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
	return &browserClient{e: e, c: c}
}

func (b *browserClient) get(path string, headers ...string) resp {
	b.e.t.Helper()
	req, _ := http.NewRequestWithContext(ctxT(b.e.t), http.MethodGet, b.e.url(path), nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := b.c.Do(req)
	must(b.e.t, err)
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return resp{status: res.StatusCode, header: res.Header, body: string(body)}
}

// csrf reads the form token from a page.
func (b *browserClient) csrf(path string) string {
	b.e.t.Helper()
	r := b.get(path)
	const marker = `name="csrf" value="`
	i := strings.Index(r.body, marker)
	if i < 0 {
		b.e.t.Fatalf("no csrf token on %s (%d): %.300s", path, r.status, r.body)
	}
	rest := r.body[i+len(marker):]
	return rest[:strings.IndexByte(rest, '"')]
}

func (b *browserClient) post(path string, form url.Values) resp {
	b.e.t.Helper()
	req, _ := http.NewRequestWithContext(ctxT(b.e.t), http.MethodPost, b.e.url(path), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := b.c.Do(req)
	must(b.e.t, err)
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return resp{status: res.StatusCode, header: res.Header, body: string(body)}
}

// snapshot returns a digest of every configured row, to prove a refused request changed
// nothing.
func (e *env) snapshot() string {
	e.t.Helper()
	var a, l string
	must(e.t, e.pool.QueryRow(ctxT(e.t), `SELECT coalesce(md5(string_agg(t::text, '|' ORDER BY id)), '') FROM trading_accounts t`).Scan(&a))
	must(e.t, e.pool.QueryRow(ctxT(e.t), `SELECT coalesce(md5(string_agg(l::text, '|' ORDER BY id)), '') FROM copy_links l`).Scan(&l))
	var p, s string
	must(e.t, e.pool.QueryRow(ctxT(e.t), `SELECT coalesce(md5(string_agg(p::text, '|' ORDER BY account_id)), '') FROM account_protection p`).Scan(&p))
	must(e.t, e.pool.QueryRow(ctxT(e.t), `SELECT coalesce(md5(string_agg(s::text, '|' ORDER BY follower_id, link_id)), '') FROM protection_state s`).Scan(&s))
	var ps string
	must(e.t, e.pool.QueryRow(ctxT(e.t), `SELECT coalesce(md5(string_agg(f::text, '|' ORDER BY platform)), '') FROM platform_fix_symbols f`).Scan(&ps))
	return a + "/" + l + "/" + p + "/" + s + "/" + ps
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, within time.Duration, cond func() (bool, string)) {
	t.Helper()
	testwait.For(t, what, within, cond)
}

func fmtID(id int64) string { return fmt.Sprint(id) }
