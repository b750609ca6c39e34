package netsource

import (
	"net"
	"testing"
)

func TestSources(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.5:80":               "127.0.0.5",
		"[::ffff:127.0.0.5]:80":      "127.0.0.5",
		"[2001:db8:1:2:3:4:5:6]:443": "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::1]:1":   "2001:db8:1:2::/64",
		"[fe80::1%eth0]:1":           "fe80::/64",
		"2001:db8:1:3::1":            "2001:db8:1:3::/64",
		"not-an-ip:1":                "not-an-ip",
	} {
		if got := OfHostPort(in); got != want {
			t.Errorf("OfHostPort(%q) = %q, want %q", in, got, want)
		}
	}
	a := &net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 1}
	b := &net.TCPAddr{IP: net.ParseIP("2001:db8::ffff:2"), Port: 2}
	if Of(a) != Of(b) {
		t.Errorf("one /64, two sources: %q %q", Of(a), Of(b))
	}
	if Of(&net.TCPAddr{IP: net.ParseIP("10.0.0.1")}) == Of(&net.TCPAddr{IP: net.ParseIP("10.0.0.2")}) {
		t.Error("two IPv4 addresses, one source")
	}
}
