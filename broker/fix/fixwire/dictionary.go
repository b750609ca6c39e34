package fixwire

import (
	"bytes"
	_ "embed"
	"fmt"
	"sync"

	"github.com/quickfixgo/quickfix"
	"github.com/quickfixgo/quickfix/datadictionary"
)

// fix44XML is the stock FIX 4.4 data dictionary as quickfixgo v0.9.7 ships it
// (spec/FIX44.xml of github.com/quickfixgo/quickfix, under its licence in
// third_party/quickfix/LICENSE): what a venue that knows only standard FIX 4.4 accepts.
//
//go:embed spec/FIX44.xml
var fix44XML []byte

var (
	stockOnce sync.Once
	stock     quickfix.Validator
	stockErr  error
)

// stockValidator is quickfixgo's validator over the stock dictionary with its default
// settings: required fields, field order, value types and enums, and no tag the
// dictionary does not define for the message type (user-defined tags included).
func stockValidator() (quickfix.Validator, error) {
	stockOnce.Do(func() {
		dd, err := datadictionary.ParseSrc(bytes.NewReader(fix44XML))
		if err != nil {
			stockErr = fmt.Errorf("fixwire: the embedded FIX 4.4 dictionary: %w", err)
			return
		}
		stock = quickfix.NewValidator(quickfix.ValidatorSettings{
			CheckFieldsOutOfOrder: true, RejectInvalidMessage: true, CheckUserDefinedFields: true,
		}, dd, nil)
	})
	return stock, stockErr
}

// ValidateStock checks m against the stock FIX 4.4 dictionary as a venue that knows
// only standard FIX 4.4 would (a strict acceptor): nil when it passes, else the reject
// such a venue answers with (its reason and tag). m must be a parsed message (header,
// body and trailer as received, or as sent after its header was filled in).
func ValidateStock(m *quickfix.Message) quickfix.MessageRejectError {
	v, err := stockValidator()
	if err != nil {
		return quickfix.NewMessageRejectError(err.Error(), 0, nil)
	}
	return v.Validate(m)
}
