package console

import (
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/snapcopier/copier/actors"
)

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{
		"/accounts?q=a":        "/accounts?q=a",
		"/":                    "/",
		"":                     "/",
		"accounts":             "/",
		"//evil.example":       "/",
		"/\\evil.example":      "/",
		"/\t/evil.example":     "/",
		"/\n/evil.example":     "/",
		"https://evil.example": "/",
		"/a\\b":                "/",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFormatting(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		in   *float64
		want string
	}{{nil, "—"}, {f(0), "0.00"}, {f(999.5), "999.50"}, {f(1000), "1,000.00"}, {f(1234567.891), "1,234,567.89"}, {f(-25000), "-25,000.00"}, {f(-0.001), "0.00"}} {
		if got := fmtMoney(c.in); got != c.want {
			t.Errorf("fmtMoney(%v) = %q, want %q", c.in, got, c.want)
		}
	}
	for d, want := range map[time.Duration]string{0: "0", 250 * time.Microsecond: "250 µs", 42 * time.Millisecond: "42 ms",
		1500 * time.Millisecond: "1.5 s", 125 * time.Second: "2m05s", 3*time.Hour + 5*time.Minute: "3h05m", 72 * time.Hour: "3 d"} {
		if got := fmtDur(d); got != want {
			t.Errorf("fmtDur(%v) = %q, want %q", d, got, want)
		}
	}
	for host, want := range map[string]bool{"localhost": true, "LOCALHOST.": true, "app.localhost": true, "127.0.0.1": true, "::1": true,
		"[::1]": true, "0.0.0.0": false, "": false, "10.0.0.1": false, "localhost.example.com": false} {
		if got := isLoopbackHost(host); got != want {
			t.Errorf("isLoopbackHost(%q) = %v", host, got)
		}
	}
}

// TestSettingsSummaryShowsCloseOnly: a link in close-only mode says so in the tables.
func TestSettingsSummaryShowsCloseOnly(t *testing.T) {
	for raw, want := range map[string]string{
		`{}`:                                     "lot_multiplier ×1, ≤60s old",
		`{"protect":{"close_only":"let_close"}}`: "lot_multiplier ×1, CLOSE-ONLY (letting copies close), ≤60s old",
		`{"protect":{"close_only":"close_now"}}`: "lot_multiplier ×1, CLOSE-ONLY (copies closed), ≤60s old",
	} {
		if got := settingsSummary([]byte(raw)); got != want {
			t.Errorf("settingsSummary(%s) = %q, want %q", raw, got, want)
		}
	}
}

// TestThrottleKey: failed logins are counted per IPv4 address, per IPv6 /64, and through
// a trusted proxy per forwarded client; an untrusted peer's X-Forwarded-For is ignored.
func TestThrottleKey(t *testing.T) {
	a := &authenticator{trusted: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}
	for _, c := range []struct{ remote, xff, want string }{
		{"192.0.2.7:1234", "", "192.0.2.7"},
		{"[2001:db8:1:2::1]:1", "", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::9]:1", "", "2001:db8:1:2::/64"},
		{"192.0.2.7:1", "203.0.113.9", "192.0.2.7"},                // not a trusted proxy
		{"10.1.1.1:1", "203.0.113.9", "203.0.113.9"},               // through the proxy
		{"10.1.1.1:1", "203.0.113.9, 10.2.2.2", "203.0.113.9"},     // two proxies
		{"10.1.1.1:1", "198.51.100.1, 203.0.113.9", "203.0.113.9"}, // the client's own claim is left of it
		{"10.1.1.1:1", "2001:db8:5:6::1", "2001:db8:5:6::/64"},     // an IPv6 client through the proxy
		{"10.1.1.1:1", "junk", "10.1.1.1"},                         // unreadable: the proxy itself
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = c.remote
		if c.xff != "" {
			r.Header.Set("X-Forwarded-For", c.xff)
		}
		if got := a.throttleKey(r); got != c.want {
			t.Errorf("%s with X-Forwarded-For %q: %q, want %q", c.remote, c.xff, got, c.want)
		}
	}
}

// An account whose equity the trade server does not say shows "unknown", never 0 / 0.
func TestBalanceTextUnknownEquity(t *testing.T) {
	v := accountRowView{Live: &actors.AccountStatus{Phase: actors.PhaseCopying, EquityUnknown: true}}
	if got := v.BalanceText(); got != "unknown" {
		t.Fatalf("balance text %q, want unknown", got)
	}
	why := "follower equity protection cannot be evaluated: equity unknown (no new copies)"
	if l := newLiveJSON(actors.AccountStatus{Phase: actors.PhaseCopying, EquityUnknown: true, StopOut: why}); !l.EquityUnknown || l.StopOut != why {
		t.Fatalf("live %+v: want equity_unknown and the protection that holds", l)
	}
	v.Live = &actors.AccountStatus{Phase: actors.PhaseCopying, Balance: 1000, Equity: 990}
	if got := v.BalanceText(); got == "unknown" || got == "—" {
		t.Fatalf("balance text %q of a known equity", got)
	}
}
