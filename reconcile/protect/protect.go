// Package protect holds the follower's money protections as pure rules: the drawdown
// stop-out (from the equity high-water mark or from a fixed start balance), the daily loss
// limit (reset at a time of day in a time zone) and close-only mode. It reads no clock and
// does no I/O: the caller passes each equity observation with its time and persists the
// State it gets back (a stop-out must survive a takeover, so the State is written with a
// fenced write by the owner of the account).
package protect

import (
	"errors"
	"fmt"
	"math"
	"time"
	// Time zones must resolve on a machine without a zoneinfo database.
	_ "time/tzdata"
)

// ErrInvalid is matched (errors.Is) by every error Validate returns.
var ErrInvalid = errors.New("invalid protection settings")

// FieldError is one problem with one field; Field is its JSON path ("max_drawdown.percent").
type FieldError struct {
	Field   string
	Problem string
}

// Error returns "field: problem".
func (e *FieldError) Error() string { return e.Field + ": " + e.Problem }

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *FieldError) Unwrap() error { return ErrInvalid }

// ErrNotStopped is returned by Reset for an account or link that is not stopped out.
var ErrNotStopped = errors.New("not stopped out")

// Reference is what a drawdown is measured from.
type Reference string

const (
	// FromHighWater measures from the highest equity seen since the protection started or
	// was last reset.
	FromHighWater Reference = "high_water"
	// FromStartBalance measures from the fixed StartBalance (after a reset: from the equity
	// at the reset).
	FromStartBalance Reference = "start_balance"
)

// Drawdown is the maximum drawdown: exactly one of Percent and Amount is set.
type Drawdown struct {
	// Percent of the reference, in (0, 100].
	Percent float64 `json:"percent,omitempty"`
	// Amount in the account's currency, > 0.
	Amount float64 `json:"amount,omitempty"`
	// From is the reference; default FromHighWater.
	From Reference `json:"from,omitempty"`
	// StartBalance is the reference of FromStartBalance (required there, > 0).
	StartBalance float64 `json:"start_balance,omitempty"`
}

// DailyLoss is the daily loss limit: the loss since the day's first equity observation
// after ResetAt. Exactly one of Percent and Amount is set.
type DailyLoss struct {
	// Percent of the day's starting equity, in (0, 100].
	Percent float64 `json:"percent,omitempty"`
	// Amount in the account's currency, > 0.
	Amount float64 `json:"amount,omitempty"`
	// ResetAt is the start of the trading day, "HH:MM" in TimeZone; default "00:00".
	ResetAt string `json:"reset_at,omitempty"`
	// TimeZone is an IANA zone name ("Europe/London"); default "UTC".
	TimeZone string `json:"time_zone,omitempty"`
}

// CloseOnly is the close-only mode of a link or a follower.
type CloseOnly string

const (
	// CopyNormally is the default: copies open and close with their masters.
	CopyNormally CloseOnly = ""
	// LetClose opens no new copies; existing copies close with their masters.
	LetClose CloseOnly = "let_close"
	// CloseNow opens no new copies and closes the existing ones at once.
	CloseNow CloseOnly = "close_now"
)

// Stricter returns the stricter of two modes: CloseNow over LetClose over CopyNormally.
// A follower's own mode and its link's combine this way. Unknown modes count as CloseNow:
// a mode this version does not know must not copy more than one it does.
func Stricter(a, b CloseOnly) CloseOnly {
	rank := func(c CloseOnly) int {
		switch c {
		case CopyNormally:
			return 0
		case LetClose:
			return 1
		}
		return 2
	}
	if rank(a) >= rank(b) {
		if rank(a) == 2 {
			return CloseNow
		}
		return a
	}
	if rank(b) == 2 {
		return CloseNow
	}
	return b
}

// Limits are the protections of one link or one follower.
type Limits struct {
	Drawdown  *Drawdown  `json:"max_drawdown,omitempty"`
	DailyLoss *DailyLoss `json:"daily_loss,omitempty"`
	// KeepOnBreach leaves the copies open on a stop-out (only new copies stop); by default
	// a stop-out closes them.
	KeepOnBreach bool `json:"keep_on_breach,omitempty"`
	// CloseOnly is set by the operator; it is not a stop-out and has no reset.
	CloseOnly CloseOnly `json:"close_only,omitempty"`
}

// Enabled reports whether any stop-out rule is configured.
func (l Limits) Enabled() bool { return l.Drawdown != nil || l.DailyLoss != nil }

// Validate reports every problem with l, each a *FieldError (matching ErrInvalid).
func (l Limits) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: field, Problem: fmt.Sprintf(format, args...)})
	}
	limit := func(field string, percent, amount float64) {
		switch {
		case percent != 0 && amount != 0:
			bad(field, "set percent or amount, not both")
		case percent == 0 && amount == 0:
			bad(field, "set percent or amount")
		case percent != 0 && !(percent > 0 && percent <= 100):
			bad(field+".percent", "%v is not in (0, 100]", percent)
		case amount != 0 && !(amount > 0 && !math.IsInf(amount, 0)):
			bad(field+".amount", "%v is not a positive amount", amount)
		}
	}
	if d := l.Drawdown; d != nil {
		limit("max_drawdown", d.Percent, d.Amount)
		switch d.From {
		case "", FromHighWater:
			if d.StartBalance != 0 {
				bad("max_drawdown.start_balance", "only with from %q", FromStartBalance)
			}
		case FromStartBalance:
			if !(d.StartBalance > 0 && !math.IsInf(d.StartBalance, 0)) {
				bad("max_drawdown.start_balance", "%v is not a positive balance", d.StartBalance)
			}
		default:
			bad("max_drawdown.from", "%q is not %q or %q", d.From, FromHighWater, FromStartBalance)
		}
	}
	if d := l.DailyLoss; d != nil {
		limit("daily_loss", d.Percent, d.Amount)
		if _, _, err := parseClock(d.ResetAt); err != nil {
			bad("daily_loss.reset_at", "%v", err)
		}
		if _, err := loadZone(d.TimeZone); err != nil {
			bad("daily_loss.time_zone", "%q is not a known time zone", d.TimeZone)
		}
	}
	switch l.CloseOnly {
	case CopyNormally, LetClose, CloseNow:
	default:
		bad("close_only", "%q is not %q or %q", l.CloseOnly, LetClose, CloseNow)
	}
	return errors.Join(errs...)
}

func parseClock(s string) (hour, minute int, err error) {
	if s == "" {
		return 0, 0, nil
	}
	t, err := time.Parse("15:04", s)
	if err != nil {
		return 0, 0, fmt.Errorf("%q is not HH:MM", s)
	}
	return t.Hour(), t.Minute(), nil
}

func loadZone(name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	// LoadLocation accepts "Local"; a stored setting must mean the same on every node.
	if name == "Local" {
		return nil, errors.New("local time differs between nodes")
	}
	return time.LoadLocation(name)
}

// Reason says which rule stopped the copying.
type Reason string

const (
	ReasonDrawdown  Reason = "max_drawdown"
	ReasonDailyLoss Reason = "daily_loss"
)

// StopOut records a breach. Until is zero for a stop-out that lasts until an operator
// resets it, and the next day's reset time for the daily loss limit.
type StopOut struct {
	At     time.Time `json:"at"`
	Reason Reason    `json:"reason"`
	Equity float64   `json:"equity"`
	// Loss is the drawdown or the day's loss at the breach, in the account's currency.
	Loss  float64   `json:"loss"`
	Until time.Time `json:"until,omitzero"`
}

// State is what the rules remember between observations. The zero value is the state of
// a protection that has seen nothing yet.
type State struct {
	// HighWater is the highest equity seen since the start or the last reset.
	HighWater float64 `json:"high_water,omitempty"`
	// Base replaces Drawdown.StartBalance after a reset (zero: none).
	Base float64 `json:"base,omitempty"`
	// Day is the start of the current trading day; DayEquity the first equity seen in it.
	Day       time.Time `json:"day,omitzero"`
	DayEquity float64   `json:"day_equity,omitempty"`
	// Stop is the stop-out in force, nil while copying.
	Stop *StopOut `json:"stop,omitempty"`
}

// Stopped reports whether a stop-out is in force at now.
func (s State) Stopped(now time.Time) bool {
	return s.Stop != nil && (s.Stop.Until.IsZero() || now.Before(s.Stop.Until))
}

// Observe applies one equity observation at time at and returns the new state, and the
// stop-out when this observation breached a limit (nil otherwise, also while an earlier
// stop-out is in force). l must be valid. A daily stop-out ends at the next reset time.
func Observe(l Limits, s State, at time.Time, equity float64) (State, *StopOut) {
	if s.Stop != nil && !s.Stopped(at) {
		s.Stop = nil // the daily limit's stop-out ran out
	}
	if equity > s.HighWater {
		s.HighWater = equity
	}
	var loc *time.Location
	var hour, minute int
	if d := l.DailyLoss; d != nil {
		loc, _ = loadZone(d.TimeZone)
		hour, minute, _ = parseClock(d.ResetAt)
		if day := dayStart(at, loc, hour, minute); !day.Equal(s.Day) {
			s.Day, s.DayEquity = day, equity
		}
	}
	if s.Stop != nil {
		return s, nil
	}
	if d := l.Drawdown; d != nil {
		ref := s.HighWater
		if d.From == FromStartBalance {
			ref = d.StartBalance
			if s.Base != 0 {
				ref = s.Base
			}
		}
		if loss := ref - equity; breached(loss, ref, d.Percent, d.Amount) {
			s.Stop = &StopOut{At: at, Reason: ReasonDrawdown, Equity: equity, Loss: loss}
			return s, s.Stop
		}
	}
	if d := l.DailyLoss; d != nil {
		if loss := s.DayEquity - equity; breached(loss, s.DayEquity, d.Percent, d.Amount) {
			next := time.Date(s.Day.Year(), s.Day.Month(), s.Day.Day()+1, hour, minute, 0, 0, loc)
			s.Stop = &StopOut{At: at, Reason: ReasonDailyLoss, Equity: equity, Loss: loss, Until: next}
			return s, s.Stop
		}
	}
	return s, nil
}

// breached: a loss reaches the amount, or the percent of a positive reference.
func breached(loss, ref, percent, amount float64) bool {
	if loss <= 0 {
		return false
	}
	if amount > 0 {
		return loss >= amount
	}
	return ref > 0 && loss/ref*100 >= percent
}

// dayStart is the latest hour:minute in loc at or before at.
func dayStart(at time.Time, loc *time.Location, hour, minute int) time.Time {
	t := at.In(loc)
	start := time.Date(t.Year(), t.Month(), t.Day(), hour, minute, 0, 0, loc)
	if start.After(at) {
		start = time.Date(t.Year(), t.Month(), t.Day()-1, hour, minute, 0, 0, loc)
	}
	return start
}

// Reset ends a stop-out at the operator's request. The drawdown is measured again from
// the equity at the reset (otherwise the next observation would breach again), and the
// day's loss from that equity too.
func Reset(s State, at time.Time, equity float64) (State, error) {
	if !s.Stopped(at) {
		return s, ErrNotStopped
	}
	s.Stop = nil
	s.HighWater = equity
	s.Base = equity
	s.DayEquity = equity
	return s, nil
}

// Slippage is the follower's fill against the master's price in points, signed so that a
// worse fill is positive: paying more on a buy, receiving less on a sell.
func Slippage(buy bool, masterPrice, fillPrice, point float64) float64 {
	if point <= 0 {
		return 0
	}
	d := (fillPrice - masterPrice) / point
	if !buy {
		d = -d
	}
	return d
}
