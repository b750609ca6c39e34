package bridge

import (
	"context"
	"errors"

	"github.com/snapcopier/copier/broker"
)

// wireError is how an error travels: its class by name, its return code and message.
type wireError struct {
	Class   string `json:"class"`
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Class names on the wire, one per broker error class.
const (
	classRetryable      = "retryable"
	classUnknownOutcome = "unknown_outcome"
	classPermanent      = "permanent"
	classMarketClosed   = "market_closed"
	classDisconnected   = "disconnected"
	classFenced         = "fenced"
	classExpired        = "expired"
)

func className(class error) string {
	switch class {
	case broker.ErrRetryable:
		return classRetryable
	case broker.ErrUnknownOutcome:
		return classUnknownOutcome
	case broker.ErrPermanent:
		return classPermanent
	case broker.ErrMarketClosed:
		return classMarketClosed
	case broker.ErrDisconnected:
		return classDisconnected
	case broker.ErrFenced:
		return classFenced
	case broker.ErrExpired:
		return classExpired
	}
	return ""
}

func classByName(name string) error {
	switch name {
	case classRetryable:
		return broker.ErrRetryable
	case classUnknownOutcome:
		return broker.ErrUnknownOutcome
	case classPermanent:
		return broker.ErrPermanent
	case classMarketClosed:
		return broker.ErrMarketClosed
	case classDisconnected:
		return broker.ErrDisconnected
	case classFenced:
		return broker.ErrFenced
	case classExpired:
		return broker.ErrExpired
	}
	return nil
}

// toWireError encodes err, the outcome of method on the server. A classified error keeps
// its class, code and message. An unclassified one is classified here, as the broker
// package asks callers to: an order that failed without a class has an unknown outcome;
// another call that ended with its context is disconnected (safe to resend); anything
// else is permanent.
func toWireError(method string, err error) *wireError {
	var te *broker.TradeError
	if errors.As(err, &te) && className(te.Class) != "" {
		return &wireError{Class: className(te.Class), Code: int(te.Code), Message: te.Msg}
	}
	if c := broker.ClassOf(err); c != nil {
		return &wireError{Class: className(c), Message: err.Error()}
	}
	w := &wireError{Class: classPermanent, Message: err.Error()}
	ctxErr := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
	switch {
	case isOrderMethod(method):
		w.Class = classUnknownOutcome
		if ctxErr {
			w.Code = int(broker.CodeTimeout)
		}
	case ctxErr:
		w.Class, w.Code = classDisconnected, int(broker.CodeNoConnection)
	}
	return w
}

// toError rebuilds the error on the client. An unknown class name (a newer server) is
// unknown outcome for an order and permanent otherwise.
func (w *wireError) toError(method string) *broker.TradeError {
	class := classByName(w.Class)
	if class == nil {
		class = broker.ErrPermanent
		if isOrderMethod(method) {
			class = broker.ErrUnknownOutcome
		}
	}
	return &broker.TradeError{Code: broker.Code(w.Code), Class: class, Msg: w.Message}
}

// causeError is a classified error that also wraps its cause (a context or network
// error), so both errors.Is(err, broker.ErrUnknownOutcome) and
// errors.Is(err, context.DeadlineExceeded) hold, and errors.As finds the TradeError.
type causeError struct {
	te    *broker.TradeError
	cause error
}

func (e *causeError) Error() string   { return e.te.Error() + ": " + e.cause.Error() }
func (e *causeError) Unwrap() []error { return []error{e.te, e.cause} }

// classified returns a TradeError of class and code with msg, wrapping cause when it is
// not nil.
func classified(class error, code broker.Code, msg string, cause error) error {
	te := &broker.TradeError{Code: code, Class: class, Msg: msg}
	if cause == nil {
		return te
	}
	return &causeError{te: te, cause: cause}
}
