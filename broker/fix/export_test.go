package fix

// SetWire makes b report every message it writes (before any Connect).
func SetWire(b *Broker, f func(raw string)) { b.wire = f }
