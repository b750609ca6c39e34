package console_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/snapcopier/copier/store"
)

// linkJSON is the subset of the API's link the tests read.
type linkJSON struct {
	ID                int64           `json:"id"`
	MasterID          int64           `json:"master_id"`
	FollowerID        int64           `json:"follower_id"`
	Enabled           bool            `json:"enabled"`
	Magic             int64           `json:"magic"`
	Version           int64           `json:"version"`
	Settings          json.RawMessage `json:"settings"`
	EffectiveSettings *struct {
		Sizing struct {
			Mode       string  `json:"mode"`
			FixedLot   float64 `json:"fixed_lot"`
			Multiplier float64 `json:"multiplier"`
		} `json:"sizing"`
	} `json:"effective_settings"`
}

func compact(raw []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return "invalid: " + string(raw)
	}
	return b.String()
}

func TestLinksAPI(t *testing.T) {
	e := newEnv(t)
	e.seed(1, store.RoleMaster, "mt5", "m1")
	e.seed(2, store.RoleMaster, "mt5", "m2")
	e.seed(10, store.RoleFollower, "mt5", "f10")
	e.seed(11, store.RoleFollower, "mt5", "f11")

	r := e.do("POST", "/api/links", rawBody(`{"master_id":1,"follower_id":10,"magic":7001,"settings":{"sizing":{"mode":"fixed_lot","fixed_lot":0.2}}}`), bearer)
	if r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	var l linkJSON
	r.json(t, &l)
	if l.MasterID != 1 || l.FollowerID != 10 || !l.Enabled || l.Magic != 7001 || l.EffectiveSettings == nil ||
		l.EffectiveSettings.Sizing.Mode != "fixed_lot" || l.EffectiveSettings.Sizing.FixedLot != 0.2 ||
		compact(l.Settings) != `{"sizing":{"mode":"fixed_lot","fixed_lot":0.2}}` {
		t.Fatalf("created %s", r.body)
	}
	if r.header.Get("Location") != "/api/links/"+fmtID(l.ID) {
		t.Fatalf("Location %q", r.header.Get("Location"))
	}
	// Defaults: no settings is {}.
	r = e.do("POST", "/api/links", rawBody(`{"master_id":2,"follower_id":10,"magic":7002,"enabled":false}`), basic)
	var l2 linkJSON
	r.json(t, &l2)
	if r.status != 201 || l2.Enabled || compact(l2.Settings) != "{}" || l2.EffectiveSettings.Sizing.Multiplier != 1 {
		t.Fatalf("create with defaults: %d %s", r.status, r.body)
	}

	before := e.snapshot()
	for _, c := range []struct {
		name, body string
		status     int
		field      string
		want       string
	}{
		{"no master", `{"follower_id":10,"magic":1}`, 422, "master_id", "required"},
		{"no follower", `{"master_id":1,"magic":1}`, 422, "follower_id", "required"},
		{"no magic", `{"master_id":1,"follower_id":11}`, 422, "magic", "required"},
		{"zero magic", `{"master_id":1,"follower_id":11,"magic":0}`, 422, "magic", "greater than 0"},
		{"negative magic", `{"master_id":1,"follower_id":11,"magic":-5}`, 422, "magic", "greater than 0"},
		{"same account", `{"master_id":10,"follower_id":10,"magic":1}`, 422, "follower_id", "differ"},
		{"master is a follower", `{"master_id":11,"follower_id":10,"magic":1}`, 422, "master_id", "is a follower, not a master"},
		{"follower is a master", `{"master_id":1,"follower_id":2,"magic":1}`, 422, "follower_id", "is a master, not a follower"},
		{"unknown master", `{"master_id":99,"follower_id":11,"magic":1}`, 422, "master_id", "no account 99"},
		{"magic in use", `{"master_id":2,"follower_id":10,"magic":7001}`, 409, "magic", "uses magic 7001"},
		{"duplicate", `{"master_id":1,"follower_id":10,"magic":9999}`, 409, "master_id", "exists already"},
		{"settings field", `{"master_id":1,"follower_id":11,"magic":1,"settings":{"sizing":{"multiplier":0}}}`, 422, "settings", "sizing.multiplier"},
		{"settings unknown", `{"master_id":1,"follower_id":11,"magic":1,"settings":{"sizzling":{}}}`, 422, "settings", "sizzling"},
		{"settings type", `{"master_id":1,"follower_id":11,"magic":1,"settings":{"reverse":"yes"}}`, 422, "settings", "reverse"},
		{"settings not object", `{"master_id":1,"follower_id":11,"magic":1,"settings":[1]}`, 422, "settings", "JSON object"},
		{"settings null", `{"master_id":1,"follower_id":11,"magic":1,"settings":null}`, 422, "settings", "JSON object"},
		{"magic as string", `{"master_id":1,"follower_id":11,"magic":"7"}`, 400, "", `field "magic": want a number`},
	} {
		r := e.do("POST", "/api/links", rawBody(c.body), bearer)
		if r.status != c.status {
			t.Errorf("%s: %d, want %d: %s", c.name, r.status, c.status, r.body)
			continue
		}
		msg, fields := r.apiErr(t)
		got := msg
		if c.field != "" {
			got = fields[c.field]
		}
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: %q / %v does not say %q", c.name, msg, fields, c.want)
		}
	}
	// Every problem of the settings is listed by field.
	r = e.do("POST", "/api/links", rawBody(`{"master_id":1,"follower_id":11,"magic":1,"settings":{"sizing":{"mode":"fixed_lot"},"window":{"max_age_seconds":-1}}}`), bearer)
	var body struct {
		SettingsErrors []struct{ Field, Problem string } `json:"settings_errors"`
	}
	r.json(t, &body)
	if len(body.SettingsErrors) != 2 || body.SettingsErrors[0].Field != "sizing.fixed_lot" || body.SettingsErrors[1].Field != "window.max_age_seconds" {
		t.Fatalf("settings errors: %s", r.body)
	}
	if e.snapshot() != before {
		t.Fatal("a refused link changed the database")
	}

	// Read and list.
	var got linkJSON
	e.do("GET", "/api/links/"+fmtID(l.ID), nil, bearer).json(t, &got)
	if got.ID != l.ID || got.Magic != 7001 {
		t.Fatalf("get: %+v", got)
	}
	if r := e.do("GET", "/api/links/999", nil, bearer); r.status != 404 {
		t.Fatalf("missing link: %d", r.status)
	}
	var list struct {
		Total int        `json:"total"`
		Links []linkJSON `json:"links"`
	}
	for q, want := range map[string]int{"": 2, "?account=10": 2, "?account=1": 1, "?master=2": 1, "?follower=11": 0} {
		e.do("GET", "/api/links"+q, nil, bearer).json(t, &list)
		if list.Total != want || len(list.Links) != want {
			t.Errorf("links%s: %d, want %d", q, list.Total, want)
		}
	}
	if r := e.do("GET", "/api/links?account=x", nil, bearer); r.status != 400 {
		t.Fatalf("bad filter: %d", r.status)
	}

	// Edit: magic, settings, enabled; master and follower cannot change.
	cv := e.account(10).ConfigVersion
	r = e.do("PATCH", "/api/links/"+fmtID(l.ID), rawBody(`{"magic":7003,"settings":{"reverse":true}}`), bearer)
	r.json(t, &got)
	if r.status != 200 || got.Magic != 7003 || compact(got.Settings) != `{"reverse":true}` || got.Version != 2 {
		t.Fatalf("patch: %d %s", r.status, r.body)
	}
	if e.account(10).ConfigVersion <= cv {
		t.Fatal("follower config version did not move")
	}
	before = e.snapshot()
	for _, c := range []struct {
		body   string
		field  string
		status int
	}{
		{`{"master_id":2}`, "master_id", 422},
		{`{"follower_id":11}`, "follower_id", 422},
		{`{"magic":0}`, "magic", 422},
		{`{"magic":7002}`, "magic", 409}, // another link of the follower has it
		{`{"settings":{"stops":{"mode":"fixed"}}}`, "settings", 422},
	} {
		r := e.do("PATCH", "/api/links/"+fmtID(l.ID), rawBody(c.body), bearer)
		if r.status != c.status {
			t.Errorf("PATCH %s: %d %s", c.body, r.status, r.body)
			continue
		}
		if _, f := r.apiErr(t); f[c.field] == "" {
			t.Errorf("PATCH %s: no message for %s", c.body, c.field)
		}
	}
	if r := e.do("PATCH", "/api/links/999", rawBody(`{"magic":1}`), bearer); r.status != 404 {
		t.Fatalf("patch missing: %d", r.status)
	}
	if e.snapshot() != before {
		t.Fatal("a refused edit changed the database")
	}
	r = e.do("POST", "/api/links/"+fmtID(l.ID)+"/disable", nil, bearer)
	r.json(t, &got)
	if r.status != 200 || got.Enabled || e.link(l.ID).Enabled {
		t.Fatalf("disable: %d %s", r.status, r.body)
	}
	r = e.do("POST", "/api/links/"+fmtID(l.ID)+"/enable", nil, bearer)
	if r.status != 200 || !e.link(l.ID).Enabled {
		t.Fatalf("enable: %d %s", r.status, r.body)
	}
	if r := e.do("POST", "/api/links/999/enable", nil, bearer); r.status != 404 {
		t.Fatalf("enable missing: %d", r.status)
	}
	// A role the links need cannot change.
	r = e.do("PATCH", "/api/accounts/10", rawBody(`{"role":"master"}`), bearer)
	if _, f := r.apiErr(t); r.status != http.StatusConflict || !strings.Contains(f["role"], "follower of 2 link") {
		t.Fatalf("role change with links: %d %s", r.status, r.body)
	}
}

func TestLinkForms(t *testing.T) {
	e := newEnv(t)
	e.seed(1, store.RoleMaster, "mt5", "m1")
	e.seed(10, store.RoleFollower, "mt5", "f10")
	b := e.login()
	csrf := b.csrf("/links/new?follower=10")
	if r := b.get("/links/new?follower=10"); !strings.Contains(r.body, `name="follower_id" value="10"`) {
		t.Fatal("follower not prefilled")
	}
	before := e.snapshot()
	r := b.post("/links/new", url.Values{"csrf": {csrf}, "master_id": {"1"}, "follower_id": {"10"}, "magic": {"abc"}, "enabled": {"on"},
		"settings": {`{"sizing":{"mode":"fixed_lot","fixed_lot":-1}}`}})
	if r.status != 422 {
		t.Fatalf("invalid form: %d", r.status)
	}
	for _, want := range []string{"must be a whole number", `id="settings-errors"`, "<code>sizing.fixed_lot</code>", `fixed_lot&#34;:-1`} {
		if !strings.Contains(r.body, want) {
			t.Errorf("re-render lacks %q", want)
		}
	}
	if e.snapshot() != before {
		t.Fatal("database changed")
	}
	// A form that reads cleanly but lacks the follower is refused by the operation, and the
	// form comes back (the redirect to the follower's page has no follower to name).
	r = b.post("/links/new", url.Values{"csrf": {csrf}, "master_id": {"1"}, "follower_id": {""}, "magic": {"55"}, "enabled": {"on"}, "settings": {""}})
	if r.status != 422 || !strings.Contains(r.body, `id="link-form"`) {
		t.Fatalf("form without a follower: %d %.300s", r.status, r.body)
	}
	if e.snapshot() != before {
		t.Fatal("database changed")
	}
	r = b.post("/links/new", url.Values{"csrf": {csrf}, "master_id": {"1"}, "follower_id": {"10"}, "magic": {"55"}, "enabled": {"on"}, "settings": {""}})
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/accounts/10?done=created" {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	var id int64
	must(t, e.pool.QueryRow(ctxT(t), `SELECT id FROM copy_links`).Scan(&id))
	if r := b.get("/accounts/10"); !strings.Contains(r.body, `id="link-`+fmtID(id)+`"`) || !strings.Contains(r.body, "lot_multiplier ×1") {
		t.Fatalf("account page does not show the link: %.500s", r.body)
	}
	if r := b.get("/links"); r.status != 200 || !strings.Contains(r.body, "f10") {
		t.Fatalf("links page: %d", r.status)
	}
	if r := b.get("/links/" + fmtID(id)); r.status != http.StatusSeeOther || !strings.HasPrefix(r.header.Get("Location"), "/accounts/10") {
		t.Fatalf("link redirect: %d", r.status)
	}
	r = b.get("/links/" + fmtID(id) + "/edit")
	if r.status != 200 || !strings.Contains(r.body, `value="55"`) {
		t.Fatalf("edit page: %d", r.status)
	}
	r = b.post("/links/"+fmtID(id)+"/edit", url.Values{"csrf": {csrf}, "magic": {"56"}, "settings": {`{"reverse": true}`}})
	if r.status != http.StatusSeeOther {
		t.Fatalf("edit: %d %s", r.status, r.body)
	}
	if l := e.link(id); l.Magic != 56 || l.Enabled || compact(l.Settings) != `{"reverse":true}` {
		t.Fatalf("after edit: %+v %s", l, l.Settings)
	}
	r = b.post("/links/"+fmtID(id)+"/enable", url.Values{"csrf": {csrf}, "back": {"/accounts/10"}})
	if r.status != http.StatusSeeOther || !e.link(id).Enabled {
		t.Fatalf("enable: %d", r.status)
	}
}
