package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// protectionBody is GET /api/accounts/{id}/protection.
type protectionBody struct {
	Limits struct {
		Drawdown *struct {
			Percent float64 `json:"percent"`
		} `json:"max_drawdown"`
	} `json:"limits"`
	Scopes []struct {
		LinkID  int64 `json:"link_id"`
		Stopped bool  `json:"stopped"`
		Stop    *struct {
			Reason string  `json:"reason"`
			Equity float64 `json:"equity"`
		} `json:"stop"`
		Resets int64 `json:"resets"`
	} `json:"scopes"`
}

// TestProtectionAPI: a follower's own stop-out limits set through the API (the owner's
// configuration moves), bad limits refused with a clear 422 and nothing changed, a stop-out
// shown on the account page and reset by its form (CSRF required) and by the API, and a
// reset of a follower that is not stopped out refused with a 409.
func TestProtectionAPI(t *testing.T) {
	e := newEnv(t)
	e.do("POST", "/api/accounts", jsonBody(map[string]any{"id": 31, "role": "follower", "platform": "mt5", "login": "f31"}), bearer)
	e.do("POST", "/api/accounts", jsonBody(map[string]any{"id": 32, "role": "master", "platform": "mt5", "login": "m32"}), bearer)

	v := e.account(31).ConfigVersion
	r := e.do("PUT", "/api/accounts/31/protection", rawBody(`{"max_drawdown":{"percent":20},"daily_loss":{"amount":500,"reset_at":"17:00","time_zone":"America/New_York"}}`), bearer)
	var p protectionBody
	r.json(t, &p)
	if r.status != 200 || p.Limits.Drawdown == nil || p.Limits.Drawdown.Percent != 20 || e.account(31).ConfigVersion != v+1 {
		t.Fatalf("set limits: %d %s (version %d → %d)", r.status, r.body, v, e.account(31).ConfigVersion)
	}

	before := e.snapshot()
	for _, c := range []struct {
		name, path, body string
		status           int
		field, want      string
	}{
		{"negative percent", "/api/accounts/31/protection", `{"max_drawdown":{"percent":-5}}`, 422, "max_drawdown.percent", "not in (0, 100]"},
		{"over 100 %", "/api/accounts/31/protection", `{"max_drawdown":{"percent":120}}`, 422, "max_drawdown.percent", "not in (0, 100]"},
		{"percent and amount", "/api/accounts/31/protection", `{"daily_loss":{"percent":5,"amount":100}}`, 422, "daily_loss", "not both"},
		{"negative amount", "/api/accounts/31/protection", `{"daily_loss":{"amount":-100}}`, 422, "daily_loss.amount", "not a positive amount"},
		{"unknown time zone", "/api/accounts/31/protection", `{"daily_loss":{"amount":100,"time_zone":"Mars/Olympus"}}`, 422, "daily_loss.time_zone", "not a known time zone"},
		{"bad reset time", "/api/accounts/31/protection", `{"daily_loss":{"amount":100,"reset_at":"25:00"}}`, 422, "daily_loss.reset_at", "HH:MM"},
		{"close_only here", "/api/accounts/31/protection", `{"close_only":"let_close"}`, 422, "close_only", "on the account"},
		{"a master", "/api/accounts/32/protection", `{"max_drawdown":{"percent":5}}`, 422, "limits", "followers only"},
		{"unknown field", "/api/accounts/31/protection", `{"max_drawdon":{"percent":5}}`, 400, "", ""},
		{"unknown account", "/api/accounts/99/protection", `{"max_drawdown":{"percent":5}}`, 404, "", ""},
	} {
		r := e.do("PUT", c.path, rawBody(c.body), bearer)
		if r.status != c.status {
			t.Errorf("%s: status %d: %s", c.name, r.status, r.body)
			continue
		}
		if c.field != "" {
			if _, fields := r.apiErr(t); !strings.Contains(fields[c.field], c.want) {
				t.Errorf("%s: fields %v do not say %q under %q", c.name, fields, c.want, c.field)
			}
		}
	}
	// Resets: nothing to reset yet, a bad scope, an unknown account.
	for _, c := range []struct {
		name, path, body string
		status           int
		want             string
	}{
		{"not stopped out", "/api/accounts/31/protection/reset", ``, 409, "not stopped out"},
		{"negative link", "/api/accounts/31/protection/reset", `{"link_id":-1}`, 400, "link_id"},
		{"unknown account", "/api/accounts/99/protection/reset", `{}`, 404, "not found"},
	} {
		r := e.do("POST", c.path, rawBody(c.body), bearer)
		if msg, _ := r.apiErr(t); r.status != c.status || !strings.Contains(msg, c.want) {
			t.Errorf("reset, %s: %d %s", c.name, r.status, r.body)
		}
	}
	if e.snapshot() != before {
		t.Fatal("a refused request changed the database")
	}

	// A stop-out as the owner stores it.
	_, err := e.pool.Exec(ctxT(t), `INSERT INTO protection_state (follower_id, link_id, state) VALUES (31, 0,
		'{"high_water":100000,"stop":{"at":"2026-12-01T10:00:00Z","reason":"max_drawdown","equity":79000,"loss":21000}}')`)
	must(t, err)
	r = e.do("GET", "/api/accounts/31/protection", nil, bearer)
	r.json(t, &p)
	if r.status != 200 || len(p.Scopes) != 1 || !p.Scopes[0].Stopped || p.Scopes[0].Stop == nil || p.Scopes[0].Stop.Reason != "max_drawdown" {
		t.Fatalf("protection of a stopped-out follower: %d %s", r.status, r.body)
	}
	b := e.login()
	page := b.get("/accounts/31")
	if !strings.Contains(page.body, `id="stopout-badge-0"`) || !strings.Contains(page.body, `data-action="reset-0"`) {
		t.Fatalf("account page lacks the stop-out and its reset: %d", page.status)
	}
	if r := b.post("/accounts/31/protection/reset", url.Values{"link_id": {"0"}}); r.status != http.StatusForbidden {
		t.Fatalf("reset without the CSRF token: %d", r.status)
	}
	v = e.account(31).ConfigVersion
	csrf := b.csrf("/accounts/31")
	if r := b.post("/accounts/31/protection/reset", url.Values{"csrf": {csrf}, "link_id": {"0"}}); r.status != http.StatusSeeOther {
		t.Fatalf("reset by form: %d %s", r.status, r.body)
	}
	r = e.do("GET", "/api/accounts/31/protection", nil, bearer)
	r.json(t, &p)
	if len(p.Scopes) != 1 || p.Scopes[0].Stopped || p.Scopes[0].Resets != 1 || e.account(31).ConfigVersion != v+1 {
		t.Fatalf("after the reset: %s (version %d → %d)", r.body, v, e.account(31).ConfigVersion)
	}
	if page := b.get("/accounts/31"); strings.Contains(page.body, `id="stopout-badge-0"`) {
		t.Fatal("the stop-out badge stays after the reset")
	}
	if r := e.do("POST", "/api/accounts/31/protection/reset", nil, bearer); r.status != http.StatusConflict {
		t.Fatalf("a second reset: %d %s", r.status, r.body)
	}

	// The form sets and removes the limits.
	if r := b.post("/accounts/31/protection", url.Values{"csrf": {csrf}, "limits": {`{"max_drawdown":{"percent":150}}`}}); r.status != http.StatusUnprocessableEntity || !strings.Contains(r.body, "max_drawdown.percent") {
		t.Fatalf("bad limits by form: %d", r.status)
	}
	if r := b.post("/accounts/31/protection", url.Values{"csrf": {csrf}, "limits": {""}}); r.status != http.StatusSeeOther {
		t.Fatalf("limits removed by form: %d %s", r.status, r.body)
	}
	r = e.do("GET", "/api/accounts/31/protection", nil, bearer)
	var removed protectionBody
	r.json(t, &removed)
	if removed.Limits.Drawdown != nil {
		t.Fatalf("limits after removal: %s", r.body)
	}
}
