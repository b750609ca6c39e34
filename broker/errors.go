package broker

import (
	"errors"
	"fmt"
)

// Error classes. Every error a Broker or Session returns matches exactly one of them with
// errors.Is; the engine decides what to do by class, never by message.
var (
	// ErrRetryable: requote, off quotes, price changed, server busy, too many requests.
	// Safe to resend after a short, bounded backoff.
	ErrRetryable = errors.New("retryable")
	// ErrUnknownOutcome: timeout or disconnect during the call. The order may or may not
	// have executed: never resend blindly, reconcile first.
	ErrUnknownOutcome = errors.New("unknown outcome")
	// ErrPermanent: not enough money, invalid volume or stops, trade disabled, unknown
	// ticket or symbol, bad credentials. Resending the same request fails again.
	ErrPermanent = errors.New("permanent")
	// ErrMarketClosed: the symbol is not trading now; try again at a later reconcile.
	ErrMarketClosed = errors.New("market closed")
	// ErrDisconnected: no connection before the request was sent; safe to resend after
	// reconnecting.
	ErrDisconnected = errors.New("disconnected")
	// ErrFenced: the server rejected the request's fencing token as lower than one it has
	// already seen for the account. The sender has lost the account.
	ErrFenced = errors.New("fenced")
	// ErrExpired: the request arrived after its Order.Deadline (by the receiver's clock)
	// and was refused without executing. The sender's lease trust had run out; another
	// node may own the account now.
	ErrExpired = errors.New("expired")
)

// classNames names every class, for the wire, metrics and journals.
var classNames = []struct {
	class error
	name  string
}{
	{ErrRetryable, "retryable"}, {ErrUnknownOutcome, "unknown_outcome"}, {ErrPermanent, "permanent"},
	{ErrMarketClosed, "market_closed"}, {ErrDisconnected, "disconnected"}, {ErrFenced, "fenced"},
	{ErrExpired, "expired"},
}

// ClassName names an error class ("" for nil or anything that is not a class).
func ClassName(class error) string {
	for _, c := range classNames {
		if c.class == class {
			return c.name
		}
	}
	return ""
}

// ClassByName is the inverse of ClassName (nil for an unknown name).
func ClassByName(name string) error {
	for _, c := range classNames {
		if c.name == name {
			return c.class
		}
	}
	return nil
}

// Code is a trade server return code, modelled on MT5 retcodes (MT4 codes in comments).
type Code int

// Return codes the implementations use.
const (
	CodeRequote         Code = 10004 // MT4 138
	CodeTimeout         Code = 10012 // MT4 128
	CodeInvalidVolume   Code = 10014 // MT4 131
	CodeInvalidStops    Code = 10016 // MT4 130
	CodeTradeDisabled   Code = 10017 // MT4 133
	CodeMarketClosed    Code = 10018 // MT4 132
	CodeNoMoney         Code = 10019 // MT4 134
	CodePriceChanged    Code = 10020 // MT4 135
	CodeOffQuotes       Code = 10021 // MT4 136
	CodeTooManyRequests Code = 10024 // MT4 141
	CodeInvalidRequest  Code = 10013 // unknown ticket, symbol or malformed request
	CodeNoConnection    Code = 10031 // MT4 6
	CodeServerBusy      Code = 20003 // MT4 4 (server busy); no MT5 twin
	CodeFencedToken     Code = 20001 // not MetaTrader: a token lower than one seen
	CodeAuthFailed      Code = 20002 // bad login or password, unknown account
	CodeExpired         Code = 20004 // not MetaTrader: the request arrived after its deadline
)

// TradeError is a classified error with the server's return code.
type TradeError struct {
	Code  Code
	Class error // one of the Err* classes above
	Msg   string
}

// Error implements error.
func (e *TradeError) Error() string {
	return fmt.Sprintf("%s (code %d): %s", e.Class, e.Code, e.Msg)
}

// Unwrap makes errors.Is(err, ErrRetryable) and friends work.
func (e *TradeError) Unwrap() error { return e.Class }

// NewError builds a TradeError; class must be one of the Err* classes.
func NewError(class error, code Code, format string, args ...any) *TradeError {
	return &TradeError{Code: code, Class: class, Msg: fmt.Sprintf(format, args...)}
}

// ClassOf returns the class of err (one of the Err* values) or nil when err is nil or
// unclassified. Unclassified errors should be treated as ErrUnknownOutcome by callers that
// sent an order.
func ClassOf(err error) error {
	if err == nil {
		return nil
	}
	for _, c := range []error{ErrFenced, ErrExpired, ErrUnknownOutcome, ErrRetryable, ErrPermanent, ErrMarketClosed, ErrDisconnected} {
		if errors.Is(err, c) {
			return c
		}
	}
	return nil
}
