package fix

import (
	"fmt"
	"sync"
)

// health is what a Broker knows of its venue for readiness: how many of its sessions are
// logged on, and why the last one that was not closed by its owner went down or failed to
// log on. A Broker keeps no connection of its own (one session per account), so this is
// the venue's state as the node sees it.
type health struct {
	mu   sync.Mutex
	up   int
	last error // nil after any logon
}

// loggedOn records a session's logon.
func (h *health) loggedOn() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.up++
	h.last = nil
}

// loggedOff records the end of a session's logon; why is nil when its owner closed it.
func (h *health) loggedOff(why error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.up--
	if why != nil {
		h.last = why
	}
}

// failed records an attempt that did not log on.
func (h *health) failed(why error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = why
}

// err is nil while a session is logged on or nothing has gone wrong since the last logon
// (no session was ever tried, or every one was closed by its owner).
func (h *health) err(addr string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.up > 0 || h.last == nil {
		return nil
	}
	return fmt.Errorf("fix: no session logged on to %s (last: %v)", addr, h.last)
}

// Connected returns nil while one of the Broker's sessions is logged on, or while none has
// gone down or failed to log on since the last logon (a node without accounts); else why
// not, without account names: for readiness probes (the node's /readyz said "ready" while
// no FIX session could send an order).
func (b *Broker) Connected() error { return b.health.err(b.cfg.Addr) }
