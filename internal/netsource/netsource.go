// Package netsource names the source a connection or request counts against in per-source
// limits: its IPv4 address, or its IPv6 /64 (one host, or one customer, usually holds a
// whole /64, so per-address limits would let it through 2^64 times).
package netsource

import (
	"net"
	"net/netip"
)

// Of returns the source of a remote address (a *net.TCPAddr, or "host:port" text).
func Of(addr net.Addr) string {
	if tcp, ok := addr.(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(tcp.IP); ok {
			return OfIP(ip)
		}
	}
	return OfHostPort(addr.String())
}

// OfHostPort returns the source of "host:port" or a bare host; text that is no IP
// address is its own source.
func OfHostPort(s string) string {
	host := s
	if h, _, err := net.SplitHostPort(s); err == nil {
		host = h
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	return OfIP(ip)
}

// OfIP returns the source of ip: an IPv4 (or IPv4-mapped) address itself, an IPv6
// address's /64.
func OfIP(ip netip.Addr) string {
	ip = ip.Unmap().WithZone("")
	if ip.Is4() {
		return ip.String()
	}
	p, _ := ip.Prefix(64)
	return p.String()
}
