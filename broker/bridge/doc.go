// Package bridge carries the broker interfaces over the network: a Server exposes any
// broker.Broker (and, optionally, its broker.Controller) on a TCP listener, and a Client
// implements broker.Broker and broker.Controller by talking to one. PROTOCOL.md, next to
// this file, specifies the wire protocol — length-prefixed JSON frames, a hello/token
// handshake, multiplexed requests, sessions and feed subscriptions — in language-neutral
// terms, so a bridge inside a MetaTrader terminal can speak it too.
//
// # Server
//
//	srv := bridge.NewServer(simServer, simServer, bridge.ServerOptions{Token: token})
//	go srv.ListenAndServe(":7400")
//	defer srv.Close()
//
// Each connection carries any number of sessions. Requests run concurrently, each on its
// own goroutine, up to ServerOptions.MaxInflight per connection; a request above the
// limit is answered at once with a retryable error and not executed. Every request runs
// under the deadline the client sent. Without a Controller, control requests fail with a
// permanent error. When a connection ends, its requests are cancelled and its sessions
// and subscriptions closed.
//
// # Client
//
//	c, err := bridge.Dial(ctx, "host:7400", bridge.ClientOptions{Token: token})
//	sess, err := c.Connect(ctx, creds)
//
// One TCP connection carries all sessions. When it drops, the client reconnects in the
// background with bounded, jittered exponential backoff; each session is reopened on the
// new connection by its next call, with the credentials it keeps in memory for that
// purpose until it is closed. Subscriptions do not survive a drop: their channels close
// and the consumer subscribes again, getting a new epoch from the server.
//
// Errors keep their class and code across the wire: errors.Is(err, broker.ErrRetryable)
// and errors.As(err, &tradeErr) work on remote errors. Failures of the transport itself
// are classified by what the server can have seen:
//
//   - not sent (no connection, no free in-flight slot or context ended before the request
//     was written, connection lost before that): broker.ErrDisconnected;
//   - sent, then the connection dropped or the caller's context ended: an order (Open,
//     ClosePosition, Modify, master trades) fails with broker.ErrUnknownOutcome, since it
//     may have executed; any other call with broker.ErrDisconnected, safe to resend.
//
// Errors caused by a context also wrap the context's error.
//
// Feed events never block the connection: each subscription has its own buffer
// (ClientOptions.SubscriptionBuffer). A consumer that lets it fill up loses the
// subscription — its channel is closed as on a drop, and it must resubscribe and
// reconcile — rather than stalling every other session on the connection.
package bridge
