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
	for _, bad := range []string{"a@b@c", "with space", "x=1"} {
		if _, err := accountIDs(broker.Credentials{Login: "1", Server: bad}, cfg); broker.ClassOf(err) != broker.ErrPermanent {
			t.Errorf("server %q: %v, want a permanent error", bad, err)
		}
	}
}
