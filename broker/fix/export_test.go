package fix

// SetWire makes b report every message it writes (before any Connect).
func SetWire(b *Broker, f func(raw string)) { b.wire = f }

// SetReported makes b call f when it has handled a venue's own report (a protective
// order's fill or cancel at the venue), book written and follow-up orders sent.
func SetReported(b *Broker, f func(login, clOrdID string)) { b.reported = f }

// OrderReply is orderReply: how a report of an order ends it.
var OrderReply = orderReply
