package console_test

import (
	"bytes"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/snapcopier/copier/store"
)

// accountJSON is the subset of the API's account the tests read.
type accountJSON struct {
	ID             int64   `json:"id"`
	Role           string  `json:"role"`
	Platform       string  `json:"platform"`
	Login          string  `json:"login"`
	Server         string  `json:"server"`
	Enabled        bool    `json:"enabled"`
	HasCredentials bool    `json:"has_credentials"`
	CloseOnly      string  `json:"close_only"`
	FIX            fixJSON `json:"fix"`
	ConfigVersion  int64   `json:"config_version"`
	Owner          *string `json:"owner"`
	Epoch          int64   `json:"epoch"`
	Status         string  `json:"status"`
	Live           *struct {
		Phase string `json:"phase"`
	} `json:"live"`
}

// fixJSON is an account's "fix" object as API.md documents it.
type fixJSON struct {
	SenderCompID string `json:"sender_comp_id"`
	SenderSubID  string `json:"sender_sub_id"`
	TargetCompID string `json:"target_comp_id"`
	TargetSubID  string `json:"target_sub_id"`
	Username     string `json:"username"`
	Dialect      string `json:"dialect"`
	PositionMode string `json:"position_mode"`
}

// stored is the settings of f as the store keeps them (no symbol list).
func (f fixJSON) stored() store.FIXSession {
	return store.FIXSession{SenderCompID: f.SenderCompID, SenderSubID: f.SenderSubID, TargetCompID: f.TargetCompID,
		TargetSubID: f.TargetSubID, Username: f.Username, Dialect: f.Dialect, PositionMode: f.PositionMode}
}

func TestAccountsAPI(t *testing.T) {
	e := newEnv(t)

	// Create.
	r := e.do("POST", "/api/accounts", jsonBody(map[string]any{"id": 10, "role": "master", "platform": "mt5", "login": " 5001 ", "server": "Demo-1"}), bearer)
	if r.status != http.StatusCreated || r.header.Get("Location") != "/api/accounts/10" {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	var a accountJSON
	r.json(t, &a)
	if a.ID != 10 || a.Role != "master" || a.Login != "5001" || a.Server != "Demo-1" || !a.Enabled || a.HasCredentials || a.Owner != nil {
		t.Fatalf("created %+v", a)
	}
	r = e.do("POST", "/api/accounts", jsonBody(map[string]any{"id": 11, "role": "follower", "platform": "mt5", "login": "6001", "enabled": false}), basic)
	if r.status != http.StatusCreated {
		t.Fatalf("create follower: %d %s", r.status, r.body)
	}
	if e.account(11).Enabled {
		t.Fatal("enabled:false ignored")
	}

	// Bad input: a clear message naming the field, and nothing written.
	before := e.snapshot()
	for _, c := range []struct {
		name   string
		body   string
		status int
		field  string
		want   string
	}{
		{"no id", `{"role":"master","platform":"mt5","login":"x"}`, 422, "id", "required"},
		{"zero id", `{"id":0,"role":"master","platform":"mt5","login":"x"}`, 422, "id", "positive"},
		{"bad role", `{"id":12,"role":"boss","platform":"mt5","login":"x"}`, 422, "role", "master or follower"},
		{"no platform", `{"id":12,"role":"master","login":"x"}`, 422, "platform", "required"},
		{"bad platform", `{"id":12,"role":"master","platform":"mt 5","login":"x"}`, 422, "platform", "letters"},
		{"no login", `{"id":12,"role":"master","platform":"mt5","login":"  "}`, 422, "login", "required"},
		{"control chars", `{"id":12,"role":"master","platform":"mt5","login":"a\u0007b"}`, 422, "login", "control"},
		{"lone surrogate", `{"id":12,"role":"master","platform":"mt5","login":"a\ud800b"}`, 422, "login", "U+FFFD"},
		{"lone low surrogate", `{"id":12,"role":"master","platform":"mt5","login":"x","server":"\udfffDemo"}`, 422, "server", "U+FFFD"},
		{"right-to-left override", `{"id":12,"role":"master","platform":"mt5","login":"\u202Egnp.exe"}`, 422, "login", "bidirectional"},
		{"isolate", `{"id":12,"role":"master","platform":"mt5","login":"x","server":"Demo\u2067-1"}`, 422, "server", "bidirectional"},
		{"long server", `{"id":12,"role":"master","platform":"mt5","login":"x","server":"` + strings.Repeat("s", 200) + `"}`, 422, "server", "at most"},
		{"duplicate id", `{"id":10,"role":"master","platform":"mt4","login":"other"}`, 409, "id", "exists already"},
		{"duplicate login", `{"id":12,"role":"master","platform":"mt5","login":"5001","server":"Demo-1"}`, 409, "login", "another account"},
		{"id as string", `{"id":"12","role":"master","platform":"mt5","login":"x"}`, 400, "", `field "id": want a number`},
		{"unknown field", `{"id":12,"role":"master","platform":"mt5","login":"x","colour":"red"}`, 400, "", `unknown field "colour"`},
		{"malformed", `{"id":12,`, 400, "", "malformed JSON"},
		{"empty", ``, 400, "", "empty body"},
		{"trailing", `{"id":12,"role":"master","platform":"mt5","login":"x"} {}`, 400, "", "trailing data"},
		{"FIX id with a space", `{"id":12,"role":"master","platform":"fix","login":"x","fix":{"sender_comp_id":"a b"}}`, 422, "fix.sender_comp_id", "spaces"},
		{"FIX id with '='", `{"id":12,"role":"master","platform":"fix","login":"x","fix":{"target_sub_id":"x=1"}}`, 422, "fix.target_sub_id", "'='"},
		{"long FIX user", `{"id":12,"role":"master","platform":"fix","login":"x","fix":{"username":"` + strings.Repeat("u", 65) + `"}}`, 422, "fix.username", "at most"},
		{"unknown FIX field", `{"id":12,"role":"master","platform":"fix","login":"x","fix":{"password":"p"}}`, 400, "", `unknown field`},
	} {
		r := e.do("POST", "/api/accounts", rawBody(c.body), bearer)
		if r.status != c.status {
			t.Errorf("%s: status %d, want %d: %s", c.name, r.status, c.status, r.body)
			continue
		}
		msg, fields := r.apiErr(t)
		got := msg
		if c.field != "" {
			got = fields[c.field]
		}
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: %q (fields %v) does not say %q", c.name, msg, fields, c.want)
		}
	}
	if e.snapshot() != before {
		t.Fatal("a refused create changed the database")
	}

	// FIX session settings: stored, returned, replaced by an edit.
	r = e.do("POST", "/api/accounts", jsonBody(map[string]any{"id": 13, "role": "follower", "platform": "fix", "login": "77",
		"fix": map[string]any{"sender_comp_id": " demo.broker.77 ", "target_comp_id": "cServer", "target_sub_id": "TRADE", "username": "77"}}), bearer)
	if r.status != http.StatusCreated {
		t.Fatalf("create with FIX settings: %d %s", r.status, r.body)
	}
	var withFIX struct {
		FIX map[string]string `json:"fix"`
	}
	r.json(t, &withFIX)
	if withFIX.FIX["sender_comp_id"] != "demo.broker.77" || withFIX.FIX["target_sub_id"] != "TRADE" || withFIX.FIX["username"] != "77" {
		t.Fatalf("created FIX settings %v", withFIX.FIX)
	}
	r = e.do("PATCH", "/api/accounts/13", jsonBody(map[string]any{"fix": map[string]any{"sender_comp_id": "demo.broker.78"}}), bearer)
	if r.status != http.StatusOK {
		t.Fatalf("edit FIX settings: %d %s", r.status, r.body)
	}
	withFIX.FIX = nil
	r.json(t, &withFIX)
	if len(withFIX.FIX) != 1 || withFIX.FIX["sender_comp_id"] != "demo.broker.78" {
		t.Fatalf("edited FIX settings %v: the object replaces the settings", withFIX.FIX)
	}

	// Read, list, search, paginate.
	r = e.do("GET", "/api/accounts/10", nil, bearer)
	var detail struct {
		Account accountJSON `json:"account"`
		Links   []any       `json:"links"`
		Journal []any       `json:"journal"`
	}
	r.json(t, &detail)
	if r.status != 200 || detail.Account.ID != 10 || detail.Links == nil || detail.Journal != nil {
		t.Fatalf("get: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/api/accounts/99", nil, bearer); r.status != http.StatusNotFound {
		t.Fatalf("missing account: %d", r.status)
	}
	if r := e.do("GET", "/api/accounts/abc", nil, bearer); r.status != http.StatusBadRequest {
		t.Fatalf("bad id: %d", r.status)
	}
	for i := int64(100); i < 130; i++ {
		e.seed(i, store.RoleFollower, "sim", "s"+fmtID(i))
	}
	var list struct {
		Total, Page, Size, Pages int
		Accounts                 []accountJSON
	}
	e.do("GET", "/api/accounts?platform=sim&size=10&page=3", nil, bearer).json(t, &list)
	if list.Total != 30 || list.Pages != 3 || len(list.Accounts) != 10 || list.Accounts[0].ID != 120 {
		t.Fatalf("page 3: %+v", list)
	}
	e.do("GET", "/api/accounts?q=s12&role=follower", nil, bearer).json(t, &list)
	if list.Total != 10 {
		t.Fatalf("search s12: %d", list.Total)
	}
	e.do("GET", "/api/accounts?enabled=false", nil, bearer).json(t, &list)
	if list.Total != 1 || list.Accounts[0].ID != 11 {
		t.Fatalf("disabled: %+v", list)
	}
	for _, q := range []string{"role=boss", "enabled=maybe", "page=0", "size=501", "page=x"} {
		if r := e.do("GET", "/api/accounts?"+q, nil, bearer); r.status != http.StatusBadRequest || !strings.Contains(r.body, strings.Split(q, "=")[0]) {
			t.Errorf("?%s: %d %s", q, r.status, r.body)
		}
	}

	// Edit.
	r = e.do("PATCH", "/api/accounts/10", jsonBody(map[string]any{"login": "5002", "server": "Demo-2"}), bearer)
	r.json(t, &a)
	if r.status != 200 || a.Login != "5002" || a.Server != "Demo-2" || a.Role != "master" || a.Platform != "mt5" {
		t.Fatalf("patch: %d %s", r.status, r.body)
	}
	before = e.snapshot()
	for _, c := range []struct {
		path, body string
		status     int
		field      string
	}{
		{"/api/accounts/10", `{"id":11}`, 422, "id"},
		{"/api/accounts/10", `{"role":""}`, 422, "role"},
		{"/api/accounts/10", `{"login":""}`, 422, "login"},
		{"/api/accounts/10", `{"platform":"a b"}`, 422, "platform"},
		{"/api/accounts/10", `{"password":""}`, 422, "password"},
		{"/api/accounts/99", `{"login":"x"}`, 404, "id"},
		{"/api/accounts/11", `{"login":"5002","server":"Demo-2"}`, 409, "login"},
	} {
		r := e.do("PATCH", c.path, rawBody(c.body), bearer)
		if r.status != c.status {
			t.Errorf("PATCH %s %s: %d, want %d: %s", c.path, c.body, r.status, c.status, r.body)
			continue
		}
		if _, fields := r.apiErr(t); fields[c.field] == "" {
			t.Errorf("PATCH %s: no message for %s: %s", c.body, c.field, r.body)
		}
	}
	if e.snapshot() != before {
		t.Fatal("a refused edit changed the database")
	}

	// Enable and disable.
	r = e.do("POST", "/api/accounts/11/enable", nil, bearer)
	r.json(t, &a)
	if r.status != 200 || !a.Enabled || !e.account(11).Enabled {
		t.Fatalf("enable: %d %s", r.status, r.body)
	}
	r = e.do("POST", "/api/accounts/11/disable", rawBody("{}"), bearer)
	if r.status != 200 || e.account(11).Enabled {
		t.Fatalf("disable: %d %s", r.status, r.body)
	}
	if r := e.do("POST", "/api/accounts/999/disable", nil, bearer); r.status != 404 {
		t.Fatalf("disable missing: %d", r.status)
	}
	if r := e.do("DELETE", "/api/accounts/11", nil, bearer); r.status != http.StatusMethodNotAllowed {
		t.Fatalf("DELETE: %d", r.status)
	}
	if r := e.do("GET", "/api/nothing", nil, bearer); r.status != 404 || !strings.Contains(r.body, "API.md") {
		t.Fatalf("unknown endpoint: %d %s", r.status, r.body)
	}
	if !strings.Contains(e.logs.String(), `"account":11`) || !strings.Contains(e.logs.String(), `"user":"operator"`) {
		t.Fatalf("mutations not logged with who and what: %s", e.logs.String())
	}
}

// TestPasswordIsSealedAndNeverShown creates and edits accounts with broker passwords
// through the API and the forms, and looks for the password in every response, in the
// logs and in the database column.
func TestPasswordIsSealedAndNeverShown(t *testing.T) {
	e := newEnv(t)
	const pw1, pw2, pw3 = "Pa55-first-secret!", "Pa55-second-secret?", "Pa55-form-secret#"
	var bodies []string
	record := func(r resp) resp {
		bodies = append(bodies, r.body+"\n"+strings.Join(r.header.Values("Location"), " "))
		return r
	}

	r := record(e.do("POST", "/api/accounts", jsonBody(map[string]any{"id": 1, "role": "follower", "platform": "mt5", "login": "l1", "password": pw1}), bearer))
	var a accountJSON
	r.json(t, &a)
	if r.status != 201 || !a.HasCredentials {
		t.Fatalf("create with password: %d %s", r.status, r.body)
	}
	sealed := e.credentials(1)
	if strings.Contains(string(sealed), pw1) {
		t.Fatal("the database holds the password in clear")
	}
	if got, err := e.sealer.Open(sealed); err != nil || got != pw1 {
		t.Fatalf("sealed credentials do not open to the password: %v", err)
	}
	// An invalid create that carries a password: refused, password not echoed.
	record(e.do("POST", "/api/accounts", jsonBody(map[string]any{"id": 2, "role": "nope", "platform": "mt5", "login": "l2", "password": pw2}), bearer))
	record(e.do("POST", "/api/accounts", jsonBody(map[string]any{"id": 2, "role": "master", "platform": "mt5", "login": "l2", "password": pw2, "colour": 1}), bearer))
	record(e.do("PATCH", "/api/accounts/1", jsonBody(map[string]any{"password": pw2, "clear_password": true}), bearer))
	if got, _ := e.sealer.Open(e.credentials(1)); got != pw1 {
		t.Fatal("a refused edit changed the password")
	}
	// Replace it.
	record(e.do("PATCH", "/api/accounts/1", jsonBody(map[string]any{"password": pw2}), bearer))
	if got, _ := e.sealer.Open(e.credentials(1)); got != pw2 {
		t.Fatal("password not replaced")
	}
	// Reads.
	for _, p := range []string{"/api/accounts/1", "/api/accounts", "/api/accounts?q=l1", "/api/accounts/1/journal", "/api/accounts/1/positions", "/api/cluster"} {
		record(e.do("GET", p, nil, bearer))
	}
	// Forms: a create with a password and an invalid field re-renders without it.
	b := e.login()
	csrf := b.csrf("/accounts/new")
	r = record(b.post("/accounts/new", url.Values{"csrf": {csrf}, "id": {"3"}, "role": {"follower"}, "platform": {"bad platform"}, "login": {"l3"}, "password": {pw3}, "enabled": {"on"}}))
	if r.status != http.StatusUnprocessableEntity || !strings.Contains(r.body, "letters, digits") {
		t.Fatalf("form error: %d", r.status)
	}
	r = record(b.post("/accounts/new", url.Values{"csrf": {csrf}, "id": {"3"}, "role": {"follower"}, "platform": {"mt5"}, "login": {"l3"}, "password": {pw3}, "enabled": {"on"}}))
	if r.status != http.StatusSeeOther {
		t.Fatalf("form create: %d %s", r.status, r.body)
	}
	if got, _ := e.sealer.Open(e.credentials(3)); got != pw3 {
		t.Fatal("form password not sealed")
	}
	for _, p := range []string{"/accounts/1", "/accounts/1/edit", "/accounts/3", "/accounts/3/edit", "/accounts", "/"} {
		r := record(b.get(p))
		if r.status != 200 {
			t.Fatalf("%s: %d", p, r.status)
		}
	}
	if !strings.Contains(bodies[len(bodies)-3], "stored (sealed)") && !strings.Contains(b.get("/accounts/3").body, "stored (sealed)") {
		t.Fatal("account page does not say a password is stored")
	}
	// Clearing through the edit form.
	r = record(b.post("/accounts/3/edit", url.Values{"csrf": {csrf}, "role": {"follower"}, "platform": {"mt5"}, "login": {"l3"}, "clear_password": {"on"}, "enabled": {"on"}}))
	if r.status != http.StatusSeeOther || len(e.credentials(3)) != 0 {
		t.Fatalf("clear: %d %s", r.status, r.body)
	}

	for i, body := range append(bodies, e.logs.String()) {
		for _, pw := range []string{pw1, pw2, pw3} {
			if strings.Contains(body, pw) {
				t.Fatalf("response %d contains a password: %.400s", i, body)
			}
		}
	}
}

func TestPasswordWithoutSealerIsRefused(t *testing.T) {
	e := newEnv(t, withoutSealer())
	before := e.snapshot()
	r := e.do("POST", "/api/accounts", jsonBody(map[string]any{"id": 1, "role": "follower", "platform": "mt5", "login": "l1", "password": "secret-value"}), bearer)
	if r.status != 422 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if _, f := r.apiErr(t); !strings.Contains(f["password"], "COPIER_SECRET_KEY") || strings.Contains(r.body, "secret-value") {
		t.Fatalf("message: %s", r.body)
	}
	if e.snapshot() != before {
		t.Fatal("database changed")
	}
	// Without a password the account is created.
	if r := e.do("POST", "/api/accounts", jsonBody(map[string]any{"id": 1, "role": "follower", "platform": "mt5", "login": "l1"}), bearer); r.status != 201 {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

func TestAccountPagesAndForms(t *testing.T) {
	e := newEnv(t)
	e.seed(1, store.RoleMaster, "mt5", "m1")
	e.seed(2, store.RoleFollower, "mt5", "f2")
	b := e.login()
	csrf := b.csrf("/accounts")

	r := b.get("/accounts?q=f2")
	if r.status != 200 || !strings.Contains(r.body, `data-id="2"`) || strings.Contains(r.body, `data-id="1"`) {
		t.Fatalf("search page: %d", r.status)
	}
	r = b.get("/accounts?role=boss")
	if r.status != 400 || !strings.Contains(r.body, "role: must be master or follower") {
		t.Fatalf("bad filter: %d", r.status)
	}
	// The live fragment is the table only.
	r = b.get("/accounts?q=f2", "X-Copier-Partial", "rows")
	if r.status != 200 || strings.Contains(r.body, "<html") || !strings.Contains(r.body, `id="accounts"`) {
		t.Fatalf("fragment: %d %.200s", r.status, r.body)
	}
	if r := b.get("/accounts", "X-Copier-Partial", "nope"); r.status != 400 {
		t.Fatalf("unknown fragment: %d", r.status)
	}
	// Errors are shown next to their fields and nothing is written.
	before := e.snapshot()
	r = b.post("/accounts/new", url.Values{"csrf": {csrf}, "id": {"x1"}, "role": {""}, "platform": {"mt5"}, "login": {""}})
	if r.status != 422 {
		t.Fatalf("invalid form: %d", r.status)
	}
	for _, want := range []string{
		`name="id" value="x1"`, "must be a whole number",
		`id="role" name="role" class="invalid"`, "required: master or follower",
		`id="login" name="login" value="" autocomplete="off" class="invalid"`,
	} {
		if !strings.Contains(r.body, want) {
			t.Errorf("form re-render lacks %q", want)
		}
	}
	r = b.post("/accounts/2/edit", url.Values{"csrf": {csrf}, "role": {"follower"}, "platform": {"mt5"}, "login": {"m1"}, "enabled": {"on"}})
	if r.status != http.StatusConflict || !strings.Contains(r.body, "another account has this login") {
		t.Fatalf("duplicate login edit: %d", r.status)
	}
	if e.snapshot() != before {
		t.Fatal("database changed")
	}
	// A valid edit and enable/disable round trip.
	r = b.post("/accounts/2/edit", url.Values{"csrf": {csrf}, "role": {"follower"}, "platform": {"mt5"}, "login": {"f2b"}, "server": {"S"}})
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/accounts/2?done=saved" {
		t.Fatalf("edit: %d %s", r.status, r.header.Get("Location"))
	}
	if a := e.account(2); a.Login != "f2b" || a.Server != "S" || a.Enabled {
		t.Fatalf("after edit %+v", a)
	}
	if r := b.get("/accounts/2?done=saved"); !strings.Contains(r.body, "Saved.") {
		t.Fatal("no confirmation")
	}
	r = b.post("/accounts/2/enable", url.Values{"csrf": {csrf}, "back": {"/accounts?q=f2"}})
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/accounts?q=f2&done=enabled" || !e.account(2).Enabled {
		t.Fatalf("enable: %d %s", r.status, r.header.Get("Location"))
	}
	r = b.post("/accounts/2/disable", url.Values{"csrf": {csrf}, "back": {"https://evil.example/"}})
	if r.header.Get("Location") != "/?done=disabled" {
		t.Fatalf("foreign back URL followed: %s", r.header.Get("Location"))
	}
	for _, p := range []string{"/accounts/99", "/accounts/99/edit", "/links/99/edit", "/nothing"} {
		if r := b.get(p); r.status != http.StatusNotFound {
			t.Errorf("%s: %d", p, r.status)
		}
	}
	// The cluster page without a node says so.
	if r := b.get("/"); r.status != 200 || !strings.Contains(r.body, "No node runs in this process") {
		t.Fatalf("cluster page: %d", r.status)
	}
	if r := e.do("GET", "/api/node", nil, bearer); r.status != 404 {
		t.Fatalf("/api/node without a node: %d", r.status)
	}
	for _, p := range []string{"/api/node/claiming", "/api/node/drain"} {
		if r := e.do("POST", p, rawBody(`{"claiming":true}`), bearer); r.status != 404 {
			t.Fatalf("%s without a node: %d", p, r.status)
		}
	}
}

// TestAccountsAt20000Rows checks that the table stays fast and correct at 20,000 accounts:
// paging, the last page and a search run in the database.
func TestAccountsAt20000Rows(t *testing.T) {
	e := newEnv(t)
	_, err := e.pool.Exec(ctxT(t), `INSERT INTO trading_accounts (id, platform, role, login)
		SELECT g, 'mt5', CASE WHEN g % 100 = 0 THEN 'master' ELSE 'follower' END, 'login-' || g
		FROM generate_series(1, 20000) g`)
	must(t, err)
	b := e.login()
	for _, c := range []struct {
		path  string
		total int
		first string
	}{
		{"/api/accounts", 20000, `"id": 1,`},
		{"/api/accounts?page=400", 20000, `"id": 19951,`},
		{"/api/accounts?size=500&page=40", 20000, `"id": 19501,`},
		{"/api/accounts?q=login-1999", 11, `"id": 1999,`},
		{"/api/accounts?role=master&page=2&size=100", 200, `"id": 10100,`},
	} {
		start := time.Now()
		r := e.do("GET", c.path, nil, bearer)
		took := time.Since(start)
		var list struct{ Total int }
		r.json(t, &list)
		if r.status != 200 || list.Total != c.total || !strings.Contains(r.body, c.first) {
			t.Errorf("%s: %d, total %d (want %d), first %q missing", c.path, r.status, list.Total, c.total, c.first)
		}
		if took > 3*time.Second {
			t.Errorf("%s took %v", c.path, took)
		}
	}
	start := time.Now()
	r := b.get("/accounts?page=400")
	if r.status != 200 || !strings.Contains(r.body, `data-id="20000"`) || !strings.Contains(r.body, "19951–20000 of 20000") {
		t.Fatalf("last page: %d", r.status)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("last page took %v", took)
	}
}

// TestFIXSessionForm: the account form edits the FIX session settings: a bad id is refused
// with its field and the typed values kept; a good one is stored and shown when editing.
func TestFIXSessionForm(t *testing.T) {
	e := newEnv(t)
	b := e.login()
	csrf := b.csrf("/accounts/new")
	form := url.Values{"csrf": {csrf}, "id": {"5"}, "role": {"follower"}, "platform": {"fix"}, "login": {"55"}, "enabled": {"on"},
		"fix_sender_comp_id": {"demo broker"}, "fix_target_comp_id": {"cServer"}, "fix_target_sub_id": {"TRADE"}, "fix_username": {"55"},
		"fix_dialect": {"fix44"}, "fix_symbols": {"EURUSD 1 100000 5 0.01 0.01 100\n\nXAUUSD GOLD 100 2 0.1 0.1 0\n"}}
	r := b.post("/accounts/new", form)
	if r.status != http.StatusUnprocessableEntity || !strings.Contains(r.body, "must not contain spaces") || !strings.Contains(r.body, `value="cServer"`) ||
		!strings.Contains(r.body, "XAUUSD GOLD 100 2 0.1 0.1 0") {
		t.Fatalf("bad SenderCompID: %d, want the field's error and the typed values back", r.status)
	}
	form.Set("fix_sender_comp_id", "demo.broker.55")
	// The symbol list: a line that does not parse, and one that breaks the list's rules,
	// are refused next to the field, the text kept as typed.
	for _, c := range []struct{ text, want string }{
		{"EURUSD 1 100000 5 0.01", "line 1: want NAME ID CONTRACT DIGITS MIN STEP MAX"},
		{"EURUSD 1 100000 5.5 0.01 0.01 100", "line 1: want"},
		{"EURUSD 1 100000 5 0.01 0 100", "the lot minimum and step must be positive"},
	} {
		form.Set("fix_symbols", c.text)
		r := b.post("/accounts/new", form)
		if r.status != http.StatusUnprocessableEntity || !strings.Contains(html.UnescapeString(r.body), c.want) || !strings.Contains(r.body, c.text) {
			t.Fatalf("symbols %q: %d, want the field's error %q and the text back", c.text, r.status, c.want)
		}
	}
	form.Set("fix_symbols", "EURUSD 1 100000 5 0.01 0.01 100\n\nXAUUSD GOLD 100 2 0.1 0.1 0\n")
	// A hedging account in fix44 is refused at configuration, next to the field.
	form.Set("fix_position_mode", "hedging")
	if r := b.post("/accounts/new", form); r.status != http.StatusUnprocessableEntity ||
		!strings.Contains(r.body, "hedging cannot be served by the fix44 dialect") || !strings.Contains(r.body, `<option value="hedging" selected>`) {
		t.Fatalf("hedging in fix44: %d, want the position mode's error and the choice kept", r.status)
	}
	form.Set("fix_position_mode", "netting")
	if r := b.post("/accounts/new", form); r.status != http.StatusSeeOther {
		t.Fatalf("form create: %d %s", r.status, r.body)
	}
	if page := b.get("/accounts/5").body; !strings.Contains(page, `id="fix-session"`) ||
		!strings.Contains(page, "SenderCompID demo.broker.55 · TargetCompID cServer · TargetSubID TRADE · user 55 · dialect fix44 · position mode netting") {
		t.Fatal("the account page does not show the FIX settings")
	}
	const lines = "EURUSD 1 100000 5 0.01 0.01 100\nXAUUSD GOLD 100 2 0.1 0.1 0\n"
	if page := b.get("/accounts/5").body; !strings.Contains(page, `id="fix-symbols">`+lines) {
		t.Fatal("the account page does not show the symbol list")
	}
	want := []store.FIXSymbol{{Name: "EURUSD", ID: "1", ContractSize: 100000, Digits: 5, MinLot: 0.01, LotStep: 0.01, MaxLot: 100},
		{Name: "XAUUSD", ID: "GOLD", ContractSize: 100, Digits: 2, MinLot: 0.1, LotStep: 0.1}}
	if got := e.account(5).FIX.Symbols; !reflect.DeepEqual(got, want) {
		t.Fatalf("stored symbols %+v, want %+v", got, want)
	}
	e.seed(6, store.RoleFollower, "mt5", "66")
	if page := b.get("/accounts/6").body; !strings.Contains(page, "66") || strings.Contains(page, `id="fix-session"`) {
		t.Fatal("an account without FIX settings shows a FIX session")
	}
	edit := b.get("/accounts/5/edit").body
	for _, v := range []string{`value="demo.broker.55"`, `value="cServer"`, `value="TRADE"`, `id="fix_username" name="fix_username" value="55"`, `<option value="fix44" selected>`, `<option value="netting" selected>`, `>` + lines + `</textarea>`} {
		if !strings.Contains(edit, v) {
			t.Fatalf("edit page lacks %s", v)
		}
	}
	var a struct {
		FIX map[string]any `json:"fix"`
	}
	e.do("GET", "/api/accounts/5", nil, bearer).json(t, &struct {
		Account any `json:"account"`
	}{&a})
	if a.FIX["sender_comp_id"] != "demo.broker.55" || a.FIX["target_comp_id"] != "cServer" || a.FIX["position_mode"] != "netting" {
		t.Fatalf("stored FIX settings %v", a.FIX)
	}
}

// TestFIXSessionAPI: the JSON API takes an account's FIX session settings on create and on
// edit and returns them, never the password. Bad settings are refused, naming the field,
// with nothing changed, on create and edit alike. A change moves the account's config
// version (its owner reconnects); the same settings again, null, or an edit without them
// do not, and {} removes them.
func TestFIXSessionAPI(t *testing.T) {
	e := newEnv(t)
	const pw = "fix-password-1"
	full := map[string]any{"sender_comp_id": "demo.broker.7", "sender_sub_id": "desk1", "target_comp_id": "cServer", "target_sub_id": "TRADE", "username": "7"}
	r := e.do("POST", "/api/accounts", jsonBody(map[string]any{"id": 7, "role": "follower", "platform": "ctrader", "login": "7",
		"server": "cTrader Demo", "password": pw, "fix": full}), bearer)
	if r.status != http.StatusCreated || strings.Contains(r.body, pw) {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	var a accountJSON
	r.json(t, &a)
	want := fixJSON{SenderCompID: "demo.broker.7", SenderSubID: "desk1", TargetCompID: "cServer", TargetSubID: "TRADE", Username: "7"}
	if a.FIX != want || !a.HasCredentials {
		t.Fatalf("created %+v, want FIX %+v and a stored password", a, want)
	}
	if got := e.account(7).FIX; !reflect.DeepEqual(got, want.stored()) {
		t.Fatalf("stored %+v", got)
	}

	// Refused, on create and edit: the field is named and nothing changes.
	before := e.snapshot()
	for _, c := range []struct {
		name   string
		fix    string // the "fix" value, as JSON
		status int
		field  string // "" for a 400 without fields
		want   string
	}{
		{"space", `{"sender_comp_id":"demo broker"}`, 422, "fix.sender_comp_id", "spaces"},
		{"tab", `{"sender_sub_id":"a\tb"}`, 422, "fix.sender_sub_id", "control"},
		{"SOH", `{"target_comp_id":"c\u0001Server"}`, 422, "fix.target_comp_id", "control"},
		{"'='", `{"target_sub_id":"TRADE=1"}`, 422, "fix.target_sub_id", "'='"},
		{"long", `{"username":"` + strings.Repeat("u", 65) + `"}`, 422, "fix.username", "at most 64"},
		{"bad with good", `{"sender_comp_id":"ok","username":"a=b"}`, 422, "fix.username", "'='"},
		{"not an object", `"demo.broker.7@cServer"`, 400, "", `field "fix"`},
		{"number id", `{"sender_comp_id":7}`, 400, "", `want a string`},
		{"password inside", `{"password":"p"}`, 400, "", `unknown field "fix.password"`},
		{"unknown dialect", `{"dialect":"fix42"}`, 422, "fix.dialect", "ctrader, fix44"},
		{"unknown position mode", `{"position_mode":"hedge"}`, 422, "fix.position_mode", "netting or hedging"},
		{"hedging in fix44", `{"dialect":"fix44","position_mode":"hedging"}`, 422, "fix.position_mode", "hedging cannot be served by the fix44 dialect"},
		{"position mode not text", `{"position_mode":2}`, 400, "", "want a string"},
		{"symbol without step", `{"dialect":"fix44","symbols":[{"name":"EURUSD","id":"1","contract_size":100000,"digits":5,"min_lot":0.01}]}`, 422, "fix.symbols", "configured symbol 1 (\"EURUSD\"): the lot minimum and step must be positive"},
		{"symbol twice", `{"symbols":[{"name":"EURUSD","contract_size":1,"digits":5,"min_lot":1,"lot_step":1},{"name":"EURUSD","id":"2","contract_size":1,"digits":5,"min_lot":1,"lot_step":1}]}`, 422, "fix.symbols", "listed twice"},
		{"symbol id with a space", `{"symbols":[{"name":"EURUSD","id":"EUR USD","contract_size":1,"digits":5,"min_lot":1,"lot_step":1}]}`, 422, "fix.symbols", "venue id"},
		{"symbol digits", `{"symbols":[{"name":"EURUSD","contract_size":1,"digits":11,"min_lot":1,"lot_step":1}]}`, 422, "fix.symbols", "digits"},
		{"symbols not a list", `{"symbols":"EURUSD"}`, 400, "", `fix.symbols`},
		{"symbol unknown key", `{"symbols":[{"name":"EURUSD","lots":1}]}`, 400, "", `unknown field`},
	} {
		for _, req := range []struct{ method, path, body string }{
			{"POST", "/api/accounts", `{"id":8,"role":"follower","platform":"ctrader","login":"8","fix":` + c.fix + `}`},
			{"PATCH", "/api/accounts/7", `{"login":"changed","fix":` + c.fix + `}`},
		} {
			r := e.do(req.method, req.path, rawBody(req.body), bearer)
			if r.status != c.status {
				t.Errorf("%s %s: %d, want %d: %s", req.method, c.name, r.status, c.status, r.body)
				continue
			}
			msg, fields := r.apiErr(t)
			got := msg
			if c.field != "" {
				got = fields[c.field]
			}
			if !strings.Contains(got, c.want) {
				t.Errorf("%s %s: %q (fields %v) does not say %q", req.method, c.name, msg, fields, c.want)
			}
		}
	}
	if e.snapshot() != before {
		t.Fatal("a refused create or edit changed the database")
	}

	// Accepted edits and the config version.
	v := e.account(7).ConfigVersion
	for _, c := range []struct {
		name string
		body string
		want fixJSON
		bump bool
	}{
		{"the same settings", `{"fix":{"sender_comp_id":"demo.broker.7","sender_sub_id":"desk1","target_comp_id":"cServer","target_sub_id":"TRADE","username":"7"}}`, want, false},
		{"no fix", `{"enabled":true}`, want, false},
		{"null", `{"fix":null}`, want, false},
		{"trimmed", `{"fix":{"sender_comp_id":"  demo.broker.7b ","target_comp_id":"cServer"}}`, fixJSON{SenderCompID: "demo.broker.7b", TargetCompID: "cServer"}, true},
		{"user name only", `{"fix":{"username":"seven"}}`, fixJSON{Username: "seven"}, true},
		{"dialect", `{"fix":{"username":"seven","dialect":" fix44 "}}`, fixJSON{Username: "seven", Dialect: "fix44"}, true},
		{"netting in fix44", `{"fix":{"username":"seven","dialect":"fix44","position_mode":" netting "}}`, fixJSON{Username: "seven", Dialect: "fix44", PositionMode: "netting"}, true},
		{"hedging in ctrader", `{"fix":{"username":"seven","dialect":"ctrader","position_mode":"hedging"}}`, fixJSON{Username: "seven", Dialect: "ctrader", PositionMode: "hedging"}, true},
		{"hedging, the node's dialect", `{"fix":{"username":"seven","position_mode":"hedging"}}`, fixJSON{Username: "seven", PositionMode: "hedging"}, true},
		{"removed", `{"fix":{}}`, fixJSON{}, true},
	} {
		r := e.do("PATCH", "/api/accounts/7", rawBody(c.body), bearer)
		if r.status != http.StatusOK || strings.Contains(r.body, pw) {
			t.Fatalf("%s: %d %s", c.name, r.status, r.body)
		}
		var a accountJSON
		r.json(t, &a)
		row := e.account(7)
		if a.FIX != c.want || !reflect.DeepEqual(row.FIX, c.want.stored()) {
			t.Fatalf("%s: returned %+v, stored %+v, want %+v", c.name, a.FIX, row.FIX, c.want)
		}
		if c.bump {
			v++
		}
		if row.ConfigVersion != v || a.ConfigVersion != v {
			t.Fatalf("%s: config version %d (returned %d), want %d", c.name, row.ConfigVersion, a.ConfigVersion, v)
		}
	}
	if got, err := e.sealer.Open(e.credentials(7)); err != nil || got != pw {
		t.Fatalf("FIX edits touched the password: %v", err)
	}

	// A symbol list: stored, returned as it was sent, and a change moves the version.
	list := `[{"name":"EURUSD","id":"1","contract_size":100000,"digits":5,"min_lot":0.01,"lot_step":0.01,"max_lot":100}]`
	r = e.do("PATCH", "/api/accounts/7", rawBody(`{"fix":{"dialect":"fix44","symbols":`+list+`}}`), bearer)
	if r.status != http.StatusOK {
		t.Fatalf("symbols: %d %s", r.status, r.body)
	}
	var withList struct {
		FIX struct {
			Symbols json.RawMessage `json:"symbols"`
		} `json:"fix"`
	}
	r.json(t, &withList)
	row := e.account(7)
	want7 := []store.FIXSymbol{{Name: "EURUSD", ID: "1", ContractSize: 100000, Digits: 5, MinLot: 0.01, LotStep: 0.01, MaxLot: 100}}
	var compact bytes.Buffer
	_ = json.Compact(&compact, withList.FIX.Symbols)
	if compact.String() != list || !reflect.DeepEqual(row.FIX.Symbols, want7) || row.ConfigVersion != v+1 {
		t.Fatalf("symbols returned %s, stored %+v (version %d, want %d)", withList.FIX.Symbols, row.FIX.Symbols, row.ConfigVersion, v+1)
	}
}
