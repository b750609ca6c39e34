package fix_test

import (
	"errors"
	"testing"

	"github.com/quickfixgo/quickfix"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix"
	"github.com/snapcopier/copier/broker/fix/fixwire"
)

// TestCancelledIOCReports: the report of an immediate-or-cancel order the venue cancelled
// (39=4) or let expire (39=C) ends the order: with nothing filled a requote (retryable,
// nothing executed), with part filled a result of what filled, at its average price.
func TestCancelledIOCReports(t *testing.T) {
	report := func(status, cumQty, avgPx string) *quickfix.Message {
		m := quickfix.NewMessage()
		m.Header.SetString(quickfix.Tag(35), fixwire.MsgExecutionReport)
		m.Body.SetString(fixwire.TagExecType, status)
		m.Body.SetString(fixwire.TagOrdStatus, status)
		m.Body.SetString(fixwire.TagCumQty, cumQty)
		m.Body.SetString(fixwire.TagAvgPx, avgPx)
		m.Body.SetString(fixwire.TagLeavesQty, "0")
		m.Body.SetString(fixwire.TagTransactTime, "20261207-12:00:00.000")
		m.Body.SetString(fixwire.TagText, "not filled within the limit")
		return m
	}
	for _, status := range []string{fixwire.StatusCanceled, fixwire.StatusExpired} {
		var res broker.OrderResult
		done, err := fix.OrderReply(&res, 100_000)(report(status, "0", "0"))
		var te *broker.TradeError
		if !done || !errors.As(err, &te) || te.Class != broker.ErrRetryable || te.Code != broker.CodeRequote {
			t.Fatalf("39=%s, nothing filled: done %v, %v; want a requote", status, done, err)
		}
		res = broker.OrderResult{}
		done, err = fix.OrderReply(&res, 100_000)(report(status, "30000", "1.10002"))
		if !done || err != nil || res.Volume != 0.3 || res.Price != 1.10002 || res.ServerTime.IsZero() {
			t.Fatalf("39=%s, 30,000 of the units filled: done %v, %+v, %v; want 0.3 lots at 1.10002", status, done, res, err)
		}
	}
}
