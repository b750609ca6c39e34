package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/snapcopier/copier/broker"
)

func errInvalidRequest(format string, args ...any) error {
	return broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, format, args...)
}

func errInvalidVolume(format string, args ...any) error {
	return broker.NewError(broker.ErrPermanent, broker.CodeInvalidVolume, format, args...)
}

func errInvalidStops(format string, args ...any) error {
	return broker.NewError(broker.ErrPermanent, broker.CodeInvalidStops, format, args...)
}

func errNoMoney(format string, args ...any) error {
	return broker.NewError(broker.ErrPermanent, broker.CodeNoMoney, format, args...)
}

func errAuth() error {
	return broker.NewError(broker.ErrPermanent, broker.CodeAuthFailed, "invalid login or password")
}

func errSessionClosed() error {
	return broker.NewError(broker.ErrDisconnected, broker.CodeNoConnection, "session closed")
}

func errDisconnect() error {
	return broker.NewError(broker.ErrDisconnected, broker.CodeNoConnection, "connection dropped")
}

func errRequote() error {
	return broker.NewError(broker.ErrRetryable, broker.CodeRequote, "requote")
}

// errPriceBeyond refuses a market order whose fill would pass its worst price, as
// MetaTrader requotes an order whose price moved beyond its deviation.
func errPriceBeyond(side broker.Side, price, worst float64) error {
	return broker.NewError(broker.ErrRetryable, broker.CodeRequote, "requote: %s at %v is beyond the order's worst price %v", side, price, worst)
}

func errTimeout() error {
	return broker.NewError(broker.ErrUnknownOutcome, broker.CodeTimeout, "timeout: the order may or may not have executed")
}

func errFenced(token, seen int64) error {
	return broker.NewError(broker.ErrFenced, broker.CodeFencedToken, "token %d is lower than %d", token, seen)
}

func errExpired(deadline, now time.Time) error {
	return broker.NewError(broker.ErrExpired, broker.CodeExpired, "arrived %v after its deadline", now.Sub(deadline))
}

// errNotSent classifies a context that ended before a request reached the server: the
// request did not execute and may be resent. The context error stays in the chain.
func errNotSent(ctxErr error) error {
	return fmt.Errorf("%w: %w", broker.NewError(broker.ErrDisconnected, broker.CodeNoConnection, "request not sent"), ctxErr)
}

// codeOf returns err's return code (0 for nil or an error without one).
func codeOf(err error) broker.Code {
	if err == nil {
		return 0 // before errors.As, whose target escapes: no allocation per executed order
	}
	var te *broker.TradeError
	if errors.As(err, &te) {
		return te.Code
	}
	return 0
}

// errString is err's message, or "" for nil.
func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
