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

	"github.com/snapcopier/copier/store"
)

// TestPlatformSymbolsAPI: a platform's FIX symbol list is read and replaced through the
// JSON API, checked by the rules of an account's list (fix.CheckSymbols) with the same
// error shapes: a list that breaks them is 422 naming "symbols", a body of the wrong shape
// 400, and nothing is stored then. [] removes the list. The platform's accounts keep their
// configuration version (their owners pick the list up at their next load).
func TestPlatformSymbolsAPI(t *testing.T) {
	e := newEnv(t)
	e.seed(7, store.RoleFollower, "fixv", "7")
	const path = "/api/platforms/fixv/fix-symbols"
	empty := func(r resp) bool {
		var c bytes.Buffer
		return json.Compact(&c, []byte(r.body)) == nil && c.String() == `{"platform":"fixv","symbols":[]}`
	}
	if r := e.do("GET", path, nil, bearer); r.status != http.StatusOK || !empty(r) {
		t.Fatalf("no list: %d %s", r.status, r.body)
	}
	if r := e.do("PUT", path, rawBody(`{"symbols":[]}`), noAuth); r.status != http.StatusUnauthorized {
		t.Fatalf("unauthenticated PUT: %d", r.status)
	}
	if r := e.do("DELETE", path, nil, bearer); r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "GET, PUT" {
		t.Fatalf("DELETE: %d, Allow %q; want 405 naming GET and PUT", r.status, r.header.Get("Allow"))
	}
	v := e.account(7).ConfigVersion
	list := `[{"name":"EURUSD","id":"1","contract_size":100000,"digits":5,"min_lot":0.01,"lot_step":0.01,"max_lot":100},{"name":"XAUUSD","id":"GOLD","contract_size":100,"digits":2,"min_lot":0.1,"lot_step":0.1,"max_lot":0}]`
	r := e.do("PUT", path, rawBody(`{"symbols":`+list+`}`), bearer)
	if r.status != http.StatusOK {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	var got struct {
		Platform string          `json:"platform"`
		Symbols  json.RawMessage `json:"symbols"`
	}
	r.json(t, &got)
	var compact bytes.Buffer
	_ = json.Compact(&compact, got.Symbols)
	if got.Platform != "fixv" || compact.String() != list {
		t.Fatalf("returned %s %s, want %s", got.Platform, got.Symbols, list)
	}
	want := []store.FIXSymbol{{Name: "EURUSD", ID: "1", ContractSize: 100000, Digits: 5, MinLot: 0.01, LotStep: 0.01, MaxLot: 100},
		{Name: "XAUUSD", ID: "GOLD", ContractSize: 100, Digits: 2, MinLot: 0.1, LotStep: 0.1}}
	stored, err := store.PlatformSymbols(ctxT(t), e.pool, "fixv")
	if err != nil || !reflect.DeepEqual(stored, want) {
		t.Fatalf("stored %+v (%v), want %+v", stored, err, want)
	}
	if r := e.do("GET", path, nil, bearer); r.status != http.StatusOK || !strings.Contains(r.body, `"GOLD"`) {
		t.Fatalf("GET: %d %s", r.status, r.body)
	}
	if e.account(7).ConfigVersion != v {
		t.Fatal("the platform's list moved an account's config version")
	}

	before := e.snapshot()
	many := make([]string, 2001)
	for i := range many {
		many[i] = `{"name":"S` + fmtID(int64(i)) + `","contract_size":1,"digits":2,"min_lot":1,"lot_step":1}`
	}
	for _, c := range []struct {
		name, path, body string
		status           int
		want             string // in the "symbols" field of a 422, else in the message
	}{
		{"no step", path, `{"symbols":[{"name":"EURUSD","id":"1","contract_size":100000,"digits":5,"min_lot":0.01}]}`, 422, "configured symbol 1 (\"EURUSD\"): the lot minimum and step must be positive"},
		{"twice", path, `{"symbols":[{"name":"EURUSD","contract_size":1,"digits":5,"min_lot":1,"lot_step":1},{"name":"EURUSD","id":"2","contract_size":1,"digits":5,"min_lot":1,"lot_step":1}]}`, 422, "listed twice"},
		{"id with a space", path, `{"symbols":[{"name":"EURUSD","id":"EUR USD","contract_size":1,"digits":5,"min_lot":1,"lot_step":1}]}`, 422, "venue id"},
		{"digits", path, `{"symbols":[{"name":"EURUSD","contract_size":1,"digits":11,"min_lot":1,"lot_step":1}]}`, 422, "digits"},
		{"too many", path, `{"symbols":[` + strings.Join(many, ",") + `]}`, 422, "at most 2000 symbols"},
		{"not a list", path, `{"symbols":"EURUSD"}`, 400, "symbols"},
		{"unknown key in a symbol", path, `{"symbols":[{"name":"EURUSD","lots":1}]}`, 400, "unknown field"},
		{"unknown field", path, `{"list":[]}`, 400, "unknown field"},
		{"not an object", path, `[]`, 400, "want a JSON object"},
		{"bad platform", "/api/platforms/a%20b/fix-symbols", `{"symbols":[]}`, 400, "platform must be"},
	} {
		r := e.do("PUT", c.path, rawBody(c.body), bearer)
		if r.status != c.status {
			t.Errorf("%s: %d, want %d: %.300s", c.name, r.status, c.status, r.body)
			continue
		}
		msg, fields := r.apiErr(t)
		if c.status == 422 {
			msg = fields["symbols"]
		}
		if !strings.Contains(msg, c.want) {
			t.Errorf("%s: %q (fields %v) does not say %q", c.name, msg, fields, c.want)
		}
	}
	if e.snapshot() != before {
		t.Fatal("a refused PUT changed the database")
	}
	if r := e.do("GET", "/api/platforms/a%20b/fix-symbols", nil, bearer); r.status != http.StatusBadRequest {
		t.Fatalf("GET of a bad platform name: %d", r.status)
	}

	if r := e.do("PUT", path, rawBody(`{"symbols":[]}`), bearer); r.status != http.StatusOK || !empty(r) {
		t.Fatalf("removed: %d %s", r.status, r.body)
	}
	if stored, err := store.PlatformSymbols(ctxT(t), e.pool, "fixv"); err != nil || stored != nil {
		t.Fatalf("after removal: %+v (%v)", stored, err)
	}
}

// TestPlatformSymbolsForm: the platforms page lists the accounts' platforms with their
// lists; a platform's list is edited in the account form's text format (one symbol a line,
// NAME ID CONTRACT DIGITS MIN STEP MAX): a line that does not parse or a list that breaks
// the rules is refused next to the field with the text kept, a good one is stored and shown,
// and an empty text removes it.
func TestPlatformSymbolsForm(t *testing.T) {
	e := newEnv(t)
	e.seed(6, store.RoleFollower, "fixv", "66")
	b := e.login()
	if page := html.UnescapeString(b.get("/platforms").body); !strings.Contains(page, `data-platform="fixv"`) || !strings.Contains(page, "none: the node's") {
		t.Fatalf("platforms page: %s", page)
	}
	if r := b.get("/platforms?platform=newp"); r.status != http.StatusSeeOther || r.header.Get("Location") != "/platforms/newp/fix-symbols" {
		t.Fatalf("open a platform: %d %s", r.status, r.header.Get("Location"))
	}
	const path = "/platforms/fixv/fix-symbols"
	csrf := b.csrf(path)
	before := e.snapshot()
	for _, c := range []struct{ text, want string }{
		{"EURUSD 1 100000 5 0.01", "line 1: want NAME ID CONTRACT DIGITS MIN STEP MAX"},
		{"EURUSD 1 100000 5.5 0.01 0.01 100", "line 1: want"},
		{"EURUSD 1 100000 5 0.01 0 100", "the lot minimum and step must be positive"},
		{"EURUSD 1 100000 5 0.01 0.01 100\nEURUSD 2 100000 5 0.01 0.01 100", "listed twice"},
	} {
		r := b.post(path, url.Values{"csrf": {csrf}, "fix_symbols": {c.text}})
		if r.status != http.StatusUnprocessableEntity || !strings.Contains(html.UnescapeString(r.body), c.want) || !strings.Contains(r.body, c.text) {
			t.Fatalf("symbols %q: %d, want the field's error %q and the text back", c.text, r.status, c.want)
		}
	}
	if e.snapshot() != before {
		t.Fatal("a refused list changed the database")
	}
	r := b.post(path, url.Values{"csrf": {csrf}, "fix_symbols": {"EURUSD 1 100000 5 0.01 0.01 100\n\nXAUUSD GOLD 100 2 0.1 0.1 0\n"}})
	if r.status != http.StatusSeeOther || r.header.Get("Location") != path+"?done=saved" {
		t.Fatalf("save: %d %s", r.status, r.header.Get("Location"))
	}
	const lines = "EURUSD 1 100000 5 0.01 0.01 100\nXAUUSD GOLD 100 2 0.1 0.1 0\n"
	if page := b.get(path).body; !strings.Contains(page, `>`+lines+`</textarea>`) {
		t.Fatal("the page does not show the stored list")
	}
	want := []store.FIXSymbol{{Name: "EURUSD", ID: "1", ContractSize: 100000, Digits: 5, MinLot: 0.01, LotStep: 0.01, MaxLot: 100},
		{Name: "XAUUSD", ID: "GOLD", ContractSize: 100, Digits: 2, MinLot: 0.1, LotStep: 0.1}}
	if got, err := store.PlatformSymbols(ctxT(t), e.pool, "fixv"); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("stored %+v (%v), want %+v", got, err, want)
	}
	if page := b.get("/platforms").body; !strings.Contains(page, `<td class="num">2</td>`) {
		t.Fatal("the platforms page does not count the list")
	}
	// The account page of an account without a list of its own names the platform's.
	if page := html.UnescapeString(b.get("/accounts/6").body); !strings.Contains(page, `the platform's list: <a href="/platforms/fixv/fix-symbols">2 symbol(s)</a>`) {
		t.Fatal("the account page does not point at the platform's list")
	}
	if r := b.post(path, url.Values{"csrf": {csrf}, "fix_symbols": {"\n"}}); r.status != http.StatusSeeOther {
		t.Fatalf("remove: %d", r.status)
	}
	if got, err := store.PlatformSymbols(ctxT(t), e.pool, "fixv"); err != nil || got != nil {
		t.Fatalf("after removal: %+v (%v)", got, err)
	}
}
