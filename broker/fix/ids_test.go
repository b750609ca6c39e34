package fix

import (
	"testing"

	"github.com/snapcopier/copier/broker"
)

// An account's server field names its FIX header ids; what it leaves out comes from the
// broker's configuration.
func TestAccountIDs(t *testing.T) {
	cfg, err := Config{Addr: "h:1", SenderSubID: "node"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		server string
		want   headerIDs
	}{
		{"", headerIDs{"123", "node", "cServer", "TRADE"}},
		{"demo.icmarkets.123", headerIDs{"demo.icmarkets.123", "node", "cServer", "TRADE"}},
		{"demo.icmarkets.123/s1@LMXBD/ORDERS", headerIDs{"demo.icmarkets.123", "s1", "LMXBD", "ORDERS"}},
		{"@venue", headerIDs{"123", "node", "venue", "TRADE"}},
		{"@/QUOTE", headerIDs{"123", "node", "cServer", "QUOTE"}},
	}
	for _, c := range cases {
		got, err := accountIDs(broker.Credentials{Login: "123", Server: c.server}, cfg)
		if err != nil || got != c.want {
			t.Errorf("server %q: %+v, %v; want %+v", c.server, got, err, c.want)
		}
	}
	// The account's own settings win over the server field and the configuration.
	own := broker.Credentials{Login: "123", Server: "old@oldTarget", FIX: broker.FIXSession{SenderCompID: "S", TargetCompID: "T", TargetSubID: "QUOTE"}}
	if got, err := accountIDs(own, cfg); err != nil || got != (headerIDs{"S", "node", "T", "QUOTE"}) {
		t.Errorf("own settings: %+v, %v", got, err)
	}
	for _, bad := range []broker.FIXSession{{SenderCompID: "a b"}, {TargetSubID: "x=1"}, {Username: "u\x01"}} {
		if _, err := accountIDs(broker.Credentials{Login: "1", FIX: bad}, cfg); broker.ClassOf(err) != broker.ErrPermanent {
			t.Errorf("settings %+v: %v, want a permanent error", bad, err)
		}
	}
	for _, bad := range []string{"a@b@c", "with space", "x=1"} {
		if _, err := accountIDs(broker.Credentials{Login: "1", Server: bad}, cfg); broker.ClassOf(err) != broker.ErrPermanent {
			t.Errorf("server %q: %v, want a permanent error", bad, err)
		}
	}
}
