package bridge

import (
	"time"

	"github.com/rs/zerolog"
)

// ServerOptions configure a Server. Zero values take the documented defaults.
type ServerOptions struct {
	// Token is the shared secret every client must present in its hello frame. Empty
	// disables authentication (the server logs a warning when it starts serving).
	Token string
	// Logger receives connection-level logs; the zero Logger discards them.
	Logger zerolog.Logger
	// MaxInflight bounds the requests one connection may have in flight at once (default
	// 256). The server announces it in the welcome frame; a request above it is answered
	// at once with a retryable "too many requests" error and is not executed.
	MaxInflight int
	// HandshakeTimeout bounds the wait for a new connection's hello frame (default 10 s).
	HandshakeTimeout time.Duration
	// IdleTimeout closes a connection that sent nothing, not even a ping, for this long
	// (default 30 s). It is announced in the welcome frame so clients ping often enough.
	IdleTimeout time.Duration
	// WriteTimeout closes a connection whose peer does not take a write for this long
	// (default 10 s).
	WriteTimeout time.Duration
	// DefaultRequestTimeout bounds a request that carries no timeout (default 30 s).
	DefaultRequestTimeout time.Duration
	// MaxConns bounds the connections served at once (default 1024); a connection above
	// it is closed as soon as it is accepted.
	MaxConns int
	// MaxPendingHandshakes bounds the connections that have not completed their handshake
	// yet (default 64): unauthenticated peers cannot crowd out the clients.
	MaxPendingHandshakes int
	// MaxPendingPerSource bounds the connections of one source (an IPv4 address or an
	// IPv6 /64) that have not completed their handshake (default 8): 64 idle sockets from
	// one host, re-opened every 10 s, once locked out 54 of 56 real clients.
	MaxPendingPerSource int
	// PressureHandshakeTimeout replaces HandshakeTimeout, when shorter, for a connection
	// that arrives while half of MaxPendingHandshakes or more are taken (default 1 s).
	PressureHandshakeTimeout time.Duration
	// FrameBudget bounds the memory all connections together hold in frames being read,
	// beyond the first 64 KiB of each (default 256 MiB). A frame that would take more is
	// refused and its connection closed: 40 signed-in connections each withholding the
	// last byte of a 16 MiB frame once held 870 MB, and the default caps allowed 22 GiB.
	FrameBudget int
	// EventQueue is the number of encoded feed events a connection buffers for its writer
	// (default 1024). When it is full, the subscriptions' forwarders wait, and events back
	// up into the wrapped broker's subscription channels.
	EventQueue int
	// Clock is the server's wall clock, by which it refuses an order that arrived after
	// its deadline (default time.Now). Tests inject one that runs ahead.
	Clock func() time.Time
}

// DefaultFrameBudget is ServerOptions.FrameBudget's default.
const DefaultFrameBudget = 256 << 20

func (o ServerOptions) withDefaults() ServerOptions {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.MaxInflight <= 0 {
		o.MaxInflight = 256
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = 10 * time.Second
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 30 * time.Second
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 10 * time.Second
	}
	if o.DefaultRequestTimeout <= 0 {
		o.DefaultRequestTimeout = 30 * time.Second
	}
	if o.EventQueue <= 0 {
		o.EventQueue = 1024
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 1024
	}
	if o.MaxPendingHandshakes <= 0 {
		o.MaxPendingHandshakes = 64
	}
	if o.MaxPendingPerSource <= 0 {
		o.MaxPendingPerSource = 8
	}
	if o.PressureHandshakeTimeout <= 0 {
		o.PressureHandshakeTimeout = time.Second
	}
	if o.FrameBudget <= 0 {
		o.FrameBudget = DefaultFrameBudget
	}
	return o
}

// ClientOptions configure a Client. Zero values take the documented defaults.
type ClientOptions struct {
	// Token is the shared secret the server expects.
	Token string
	// Name identifies this client in the server's logs (default "go-bridge").
	Name string
	// Logger receives connection-level logs; the zero Logger discards them.
	Logger zerolog.Logger
	// RequestTimeout bounds a call whose context has no deadline (default 10 s). A context
	// deadline, earlier or later, takes precedence.
	RequestTimeout time.Duration
	// DialTimeout bounds one connection attempt, handshake included (default 10 s).
	DialTimeout time.Duration
	// ReconnectMin and ReconnectMax bound the exponential backoff between reconnection
	// attempts (defaults 100 ms and 10 s); every wait is jittered.
	ReconnectMin, ReconnectMax time.Duration
	// PingInterval is how often the client pings the server (default 5 s, and never
	// more than a third of the server's idle timeout). A connection on which nothing
	// arrives for three intervals is considered dead and is dropped.
	PingInterval time.Duration
	// SubscriptionBuffer is the capacity of every subscription's event channel (default
	// 1024). A subscriber that lets it fill up loses the subscription: the channel is
	// closed and the consumer must subscribe again (and reconcile).
	SubscriptionBuffer int
}

func (o ClientOptions) withDefaults() ClientOptions {
	if o.Name == "" {
		o.Name = "go-bridge"
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 10 * time.Second
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 10 * time.Second
	}
	if o.ReconnectMin <= 0 {
		o.ReconnectMin = 100 * time.Millisecond
	}
	if o.ReconnectMax <= 0 {
		o.ReconnectMax = 10 * time.Second
	}
	if o.ReconnectMax < o.ReconnectMin {
		o.ReconnectMax = o.ReconnectMin
	}
	if o.PingInterval <= 0 {
		o.PingInterval = 5 * time.Second
	}
	if o.SubscriptionBuffer <= 0 {
		o.SubscriptionBuffer = 1024
	}
	return o
}
