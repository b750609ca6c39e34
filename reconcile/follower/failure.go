package follower

import "github.com/snapcopier/copier/broker"

// Failure is what a broker error means to the Core. FailureOf is the one place the
// broker's error classes are switched on: the Core decides by Failure what follows a
// failed order or token, and the actors count and log by the Failure a Note carries.
type Failure uint8

// Failures.
const (
	FailNone         Failure = iota // no error
	FailFenced                      // the token is stale at the trade server: the account is lost
	FailExpired                     // it arrived after its trust ended and was refused: nothing executed
	FailPermanent                   // refused for good: resending fails again
	FailRetryable                   // refused for now (requote, busy): resent after a pause
	FailUnknown                     // it may have executed: never resent blindly
	FailMarketClosed                // the symbol is not trading now
	FailOther                       // disconnected, or an error of no known class
)

var failureNames = [...]string{"", "fenced", "expired", "permanent", "retryable", "unknown_outcome", "market_closed", "other"}

// String names the failure.
func (f Failure) String() string {
	if int(f) < len(failureNames) {
		return failureNames[f]
	}
	return "unknown"
}

// FailureOf classifies err (FailNone for nil).
func FailureOf(err error) Failure {
	if err == nil {
		return FailNone
	}
	switch broker.ClassOf(err) {
	case broker.ErrFenced:
		return FailFenced
	case broker.ErrExpired:
		return FailExpired
	case broker.ErrPermanent:
		return FailPermanent
	case broker.ErrRetryable:
		return FailRetryable
	case broker.ErrUnknownOutcome:
		return FailUnknown
	case broker.ErrMarketClosed:
		return FailMarketClosed
	}
	return FailOther // disconnected, unclassified
}
