package follower

import "time"

// maxClockOffset is the largest offset the estimate is trusted with: beyond it the server's
// times are taken to be wrong (a terminal that sends local times as UTC, a clock hours
// off), not skewed, and positions are dated as if the clocks were one. That errs towards
// skipping copies as too old, never towards copying positions hours old.
const maxClockOffset = 10 * time.Minute

// clockWindow is how long a sample of a master server's clock offset counts: the estimate
// is the largest sample of the current window and the one before it, so a sample ages out
// after one to two windows.
const clockWindow = 10 * time.Minute

// ServerClock estimates how far a master's trade server clock runs ahead of the node's
// (negative: behind) from its feed: each event's server time minus the node's time at its
// receipt is the offset less the event's delay, so the largest recent sample, the least
// delayed event's, is the estimate (as NTP keeps its least delayed sample). A master
// position's OpenTime is on the server's clock: without the offset, a server 60 s behind
// makes every copy too old for the default opening window, and one 2 s behind makes every
// copy late for a price-deviation bound (a quote read per copy).
type ServerClock struct {
	cur, prev       time.Duration // largest samples of the current and the previous window
	hasCur, hasPrev bool
	since           time.Time // the current window's start, on the node's clock
}

// Observe takes one event's sample, at now on the node's clock.
func (s *ServerClock) Observe(serverTime, received, now time.Time) {
	if serverTime.IsZero() || received.IsZero() {
		return
	}
	if el := now.Sub(s.since); el >= clockWindow {
		// The current window becomes the previous one, unless it ended a window ago or
		// more (a master quiet for hours): its samples are too old to count.
		s.prev, s.hasPrev = s.cur, s.hasCur && el < 2*clockWindow
		s.hasCur, s.since = false, now
	}
	if d := serverTime.Sub(received); !s.hasCur || d > s.cur {
		s.cur, s.hasCur = d, true
	}
}

// Offset is the estimate: 0 before any sample, and 0 when it is over maxClockOffset either
// way (Trusted false).
func (s *ServerClock) Offset() time.Duration {
	if d := s.raw(); s.Trusted() {
		return d
	}
	return 0
}

// Trusted reports whether the estimate is within maxClockOffset (true before any sample).
func (s *ServerClock) Trusted() bool {
	d := s.raw()
	return d <= maxClockOffset && d >= -maxClockOffset
}

// raw is the largest sample of the two windows, 0 before any.
func (s *ServerClock) raw() time.Duration {
	switch {
	case s.hasCur && s.hasPrev:
		return max(s.cur, s.prev)
	case s.hasCur:
		return s.cur
	case s.hasPrev:
		return s.prev
	}
	return 0
}

// Known reports whether the estimate rests on a sample.
func (s *ServerClock) Known() bool { return s.hasCur || s.hasPrev }
