package console

import (
	"bytes"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/secrets"
)

// FuzzAPIBodies decodes and validates arbitrary API bodies as the account, link and node
// endpoints do, without a database: never a panic, and whatever passes validation is
// what the database takes (text without NUL or invalid UTF-8, ids and magic numbers JSON
// clients read exactly, settings that parse).
func FuzzAPIBodies(f *testing.F) {
	for _, s := range []string{
		`{"id":1001,"role":"follower","platform":"mt5","login":"5012345","server":"Broker-Live01","password":"pw","enabled":true}`,
		`{"master_id":1,"follower_id":1001,"magic":7001,"enabled":true,"settings":{"sizing":{"mode":"balance_ratio","multiplier":1.5}}}`,
		`{"claiming":false}`,
		`{"login":"a\u0000b"}`,
		`{"magic":9007199254740993,"master_id":1,"follower_id":2}`,
		`{"settings":{"filters":{"include_symbols":["EUR\u0000USD"]}}}`,
		`{"settings":{"symbols":{"pairs":{"A":"\ud800"}}}}`,
		`{"ID":1}`, `{} {}`, `{}}`, `null`, ``,
	} {
		f.Add([]byte(s), true)
	}
	key := bytes.Repeat([]byte{7}, secrets.KeySize)
	sealer, err := secrets.NewSealer(key)
	if err != nil {
		f.Fatal(err)
	}
	s := &Server{opts: Options{Sealer: sealer}}
	f.Fuzz(func(t *testing.T, body []byte, create bool) {
		var a accountInput
		if decodeBody(body, &a) == nil {
			if fe := s.validateAccount(&a, create, 1); !fe.any() {
				for _, v := range []*string{a.Platform, a.Login, a.Server, a.Password} {
					if v != nil && (!utf8.ValidString(*v) || strings.ContainsRune(*v, 0)) {
						t.Fatalf("accepted text %+q", *v)
					}
				}
				if a.ID != nil && (*a.ID <= 0 || *a.ID > maxJSONInt) {
					t.Fatalf("accepted id %d", *a.ID)
				}
			}
		}
		var l linkInput
		if decodeBody(body, &l) == nil {
			fe, settings := validateLinkShape(&l, create, store.LinkRow{Link: store.Link{MasterID: 1, FollowerID: 2}})
			if !fe.any() {
				if l.Magic != nil && (*l.Magic <= 0 || *l.Magic > maxJSONInt) {
					t.Fatalf("accepted magic %d", *l.Magic)
				}
				if settings != nil {
					if !utf8.Valid(settings) || bytes.Contains(settings, []byte(`\u0000`)) {
						t.Fatalf("accepted settings the database refuses: %q", settings)
					}
					if _, err := reconcile.ParseSettings(settings); err != nil {
						t.Fatalf("stored settings do not parse: %v\n%s", err, settings)
					}
				}
			}
		}
		var c struct {
			Claiming *bool `json:"claiming"`
		}
		_ = decodeBody(body, &c)
	})
}

// FuzzAccountsQuery parses arbitrary query strings of the accounts table: never a panic,
// and what is accepted is text the database takes.
func FuzzAccountsQuery(f *testing.F) {
	for _, s := range []string{"q=f2", "q=%00", "q=%ff", "owner=a%00b&status=copying", "role=master&enabled=true&page=2&size=500", "page=99999999999999999999", "q=" + strings.Repeat("x", 201)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		q, sq, err := parseAccountsQuery(v)
		if err != nil {
			return
		}
		for _, s := range []string{q.Q, q.Platform, q.Owner, q.Status, sq.Search, sq.Node} {
			if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
				t.Fatalf("accepted %+q", s)
			}
		}
		if sq.Limit < 1 || sq.Limit > maxPageSize || sq.Offset < 0 {
			t.Fatalf("limit %d offset %d", sq.Limit, sq.Offset)
		}
	})
}
