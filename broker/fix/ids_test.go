package fix

import (
	"strings"
	"testing"

	"github.com/snapcopier/copier/broker"
)

// An account's FIX session settings name its FIX header ids; an account without them may
// name them in its server field (legacy); what neither names comes from the broker's
// configuration.
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
	// The account's own settings win over the configuration, and once it has any the
	// server field is only a label: not read for ids, not refused for spaces.
	for _, c := range []struct {
		creds broker.Credentials
		want  headerIDs
	}{
		{broker.Credentials{Login: "123", Server: "old@oldTarget", FIX: broker.FIXSession{SenderCompID: "S", TargetCompID: "T", TargetSubID: "QUOTE"}},
			headerIDs{"S", "node", "T", "QUOTE"}},
		{broker.Credentials{Login: "123", Server: "old/sub@oldTarget/OLD", FIX: broker.FIXSession{TargetCompID: "T"}},
			headerIDs{"123", "node", "T", "TRADE"}},
		{broker.Credentials{Login: "123", Server: "cTrader Demo (a label)", FIX: broker.FIXSession{Username: "u"}},
			headerIDs{"123", "node", "cServer", "TRADE"}},
		{broker.Credentials{Login: "123", FIX: broker.FIXSession{SenderCompID: "S", SenderSubID: "s", TargetCompID: "T", TargetSubID: "t"}},
			headerIDs{"S", "s", "T", "t"}},
	} {
		if got, err := accountIDs(c.creds, cfg); err != nil || got != c.want {
			t.Errorf("%+v: %+v, %v; want %+v", c.creds, got, err, c.want)
		}
	}
	for _, bad := range []broker.FIXSession{{SenderCompID: "a b"}, {TargetSubID: "x=1"}, {Username: "u\x01"}, {SenderSubID: "a\tb"},
		{TargetCompID: "line\nbreak"}, {SenderCompID: "del\x7f"}} {
		_, err := accountIDs(broker.Credentials{Login: "1", FIX: bad}, cfg)
		if broker.ClassOf(err) != broker.ErrPermanent || !strings.Contains(err.Error(), "account FIX setting") {
			t.Errorf("settings %+v: %v, want a permanent error naming the setting", bad, err)
		}
	}
	// The login is the SenderCompID only when nothing names one: then it is checked too.
	if _, err := accountIDs(broker.Credentials{Login: "a b"}, cfg); broker.ClassOf(err) != broker.ErrPermanent {
		t.Errorf("login with a space as SenderCompID: %v, want a permanent error", err)
	}
	if _, err := accountIDs(broker.Credentials{Login: "a b", FIX: broker.FIXSession{SenderCompID: "S"}}, cfg); err != nil {
		t.Errorf("login with a space, SenderCompID set: %v", err)
	}
	for _, bad := range []string{"a@b@c", "with space", "x=1", "tab\there", "soh\x01"} {
		if _, err := accountIDs(broker.Credentials{Login: "1", Server: bad}, cfg); broker.ClassOf(err) != broker.ErrPermanent {
			t.Errorf("server %q: %v, want a permanent error", bad, err)
		}
	}
}

// The Logon's user name is the account's setting, else its login; a user name that cannot
// go into a message, or a password with SOH, is refused.
func TestCheckLogon(t *testing.T) {
	if got := logonUser(broker.Credentials{Login: "123"}); got != "123" {
		t.Errorf("user name without a setting: %q, want the login", got)
	}
	if got := logonUser(broker.Credentials{Login: "123", FIX: broker.FIXSession{Username: "u"}}); got != "u" {
		t.Errorf("user name with a setting: %q, want u", got)
	}
	for _, ok := range []broker.Credentials{{Login: "123", Password: "p a=ss"}, {Login: "a b", FIX: broker.FIXSession{Username: "u"}}} {
		if err := checkLogon(ok); err != nil {
			t.Errorf("%q/%q: %v", ok.Login, ok.FIX.Username, err)
		}
	}
	for _, bad := range []broker.Credentials{{Login: "a b"}, {Login: "1", FIX: broker.FIXSession{Username: "x=y"}}, {Login: "1", Password: "p\x01w"}} {
		if err := checkLogon(bad); broker.ClassOf(err) != broker.ErrPermanent {
			t.Errorf("%q/%q: %v, want a permanent error", bad.Login, bad.FIX.Username, err)
		} else if strings.Contains(err.Error(), "p\x01w") {
			t.Errorf("the error repeats the password: %v", err)
		}
	}
}
