package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestAccountCloseOnly: a follower's own close-only mode through the API and the form:
// set on create and by PATCH (the config version moves, so the owner reloads; a PATCH to
// the same mode moves nothing), shown on the account page and in the form, and refused
// with a clear 422 for an unknown mode or a master, changing nothing.
func TestAccountCloseOnly(t *testing.T) {
	e := newEnv(t)
	r := e.do("POST", "/api/accounts", jsonBody(map[string]any{"id": 21, "role": "follower", "platform": "mt5", "login": "f21", "close_only": "let_close"}), bearer)
	var a accountJSON
	r.json(t, &a)
	if r.status != http.StatusCreated || a.CloseOnly != "let_close" {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	e.do("POST", "/api/accounts", jsonBody(map[string]any{"id": 22, "role": "master", "platform": "mt5", "login": "m22"}), bearer)

	v := e.account(21).ConfigVersion
	r = e.do("PATCH", "/api/accounts/21", jsonBody(map[string]any{"close_only": "close_now"}), bearer)
	r.json(t, &a)
	if r.status != 200 || a.CloseOnly != "close_now" || e.account(21).CloseOnly != "close_now" || e.account(21).ConfigVersion != v+1 {
		t.Fatalf("patch: %d %s (version %d → %d)", r.status, r.body, v, e.account(21).ConfigVersion)
	}
	if r := e.do("PATCH", "/api/accounts/21", jsonBody(map[string]any{"close_only": "close_now"}), bearer); r.status != 200 || e.account(21).ConfigVersion != v+1 {
		t.Fatalf("a PATCH to the same mode moved the config version: %d, version %d", r.status, e.account(21).ConfigVersion)
	}

	before := e.snapshot()
	for _, c := range []struct {
		name, method, path, body, want string
	}{
		{"unknown mode", "PATCH", "/api/accounts/21", `{"close_only":"sometimes"}`, `must be "" (copy normally)`},
		{"wrong type", "PATCH", "/api/accounts/21", `{"close_only":true}`, ""},
		{"master by PATCH", "PATCH", "/api/accounts/22", `{"close_only":"let_close"}`, "applies to followers only"},
		{"master on create", "POST", "/api/accounts", `{"id":23,"role":"master","platform":"mt5","login":"m23","close_only":"close_now"}`, "applies to followers only"},
		{"role and mode together", "PATCH", "/api/accounts/21", `{"role":"master","close_only":"let_close"}`, "applies to followers only"},
	} {
		r := e.do(c.method, c.path, rawBody(c.body), bearer)
		if r.status != http.StatusUnprocessableEntity && !(c.want == "" && r.status == http.StatusBadRequest) {
			t.Errorf("%s: status %d: %s", c.name, r.status, r.body)
			continue
		}
		if _, fields := r.apiErr(t); c.want != "" && !strings.Contains(fields["close_only"], c.want) {
			t.Errorf("%s: fields %v do not say %q", c.name, fields, c.want)
		}
	}
	if e.snapshot() != before {
		t.Fatal("a refused close-only change changed the database")
	}

	// The console: the badge on the account page, the mode kept by the form, and set by it.
	b := e.login()
	csrf := b.csrf("/accounts")
	if r := b.get("/accounts/21"); !strings.Contains(r.body, `id="close-only-badge"`) || !strings.Contains(r.body, "copies closed") {
		t.Fatalf("account page lacks the close-only badge: %d", r.status)
	}
	if r := b.get("/accounts/21/edit"); !strings.Contains(r.body, `<option value="close_now" selected>`) {
		t.Fatal("the form does not show the current mode")
	}
	r = b.post("/accounts/21/edit", url.Values{"csrf": {csrf}, "role": {"follower"}, "platform": {"mt5"}, "login": {"f21"}, "enabled": {"on"}, "close_only": {""}})
	if r.status != http.StatusSeeOther || e.account(21).CloseOnly != "" {
		t.Fatalf("form edit: %d, mode %q", r.status, e.account(21).CloseOnly)
	}
	if r := b.get("/accounts/21"); strings.Contains(r.body, `id="close-only-badge"`) {
		t.Fatal("the badge stays after the mode was lifted")
	}
	r = b.post("/accounts/21/edit", url.Values{"csrf": {csrf}, "role": {"follower"}, "platform": {"mt5"}, "login": {"f21"}, "close_only": {"later"}})
	if r.status != http.StatusUnprocessableEntity || !strings.Contains(r.body, `id="close_only" name="close_only" class="invalid"`) {
		t.Fatalf("bad mode by form: %d", r.status)
	}
}
