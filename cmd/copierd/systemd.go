package main

import (
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/internal/sdnotify"
	"github.com/snapcopier/copier/leasekeeper"
)

// systemdReporter tells systemd (Type=notify, deploy/systemd/copierd.service) how the
// node's lease cycles go: READY=1 after the first successful cycle, WATCHDOG=1 after
// every successful one and nothing after a failed one, so that a node whose cycles keep
// failing is restarted by the watchdog. It hooks into the node through Deps.Observe.
type systemdReporter struct {
	n   *sdnotify.Notifier
	log zerolog.Logger

	mu    sync.Mutex
	ready bool
}

// cycleNotification is what one lease cycle's end tells systemd; ready says whether
// READY=1 was sent before.
func cycleNotification(ready bool, err error, owned int) []string {
	if err != nil {
		return []string{"STATUS=lease cycle failing: " + oneLine(err)}
	}
	out := []string{"WATCHDOG=1", fmt.Sprintf("STATUS=lease cycles healthy; %d accounts owned", owned)}
	if !ready {
		out = append([]string{"READY=1"}, out...)
	}
	return out
}

// observe is the node's Deps.Observe: it reacts to lease cycles only.
func (s *systemdReporter) observe(sig actors.Signal) {
	if sig.Kind != actors.SignalCycle {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	msg := cycleNotification(s.ready, sig.Err, sig.Owned)
	if err := s.n.Send(msg...); err != nil {
		s.log.Warn().Err(err).Msg("systemd notification failed")
		return
	}
	s.ready = s.ready || sig.Err == nil
}

// send sends one notification outside the lease cycle (STATUS, STOPPING), logging a
// failure.
func (s *systemdReporter) send(assignments ...string) {
	if err := s.n.Send(assignments...); err != nil {
		s.log.Warn().Err(err).Msg("systemd notification failed")
	}
}

// checkWatchdog refuses a systemd watchdog interval (WatchdogSec=) that a healthy node
// could miss: successful cycles end at most one interval plus one cycle deadline apart.
func checkWatchdog(wd time.Duration, timing leasekeeper.Config) error {
	if wd == 0 {
		return nil
	}
	if need := timing.Interval + timing.CycleDeadline(); wd <= need {
		return fmt.Errorf("systemd WatchdogSec= (%v) must exceed --interval + the cycle deadline (%v + %v = %v), or a healthy node is killed",
			wd, timing.Interval, timing.CycleDeadline(), need)
	}
	return nil
}
