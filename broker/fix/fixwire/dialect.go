package fixwire

import (
	"fmt"
	"strings"
)

// Dialect is the flavour of FIX 4.4 a venue speaks: which messages and tags beyond
// standard FIX 4.4 the broker may use with it. FIX.md has the table.
type Dialect string

// The dialects.
const (
	// DialectCTrader is cTrader's FIX 4.4 with this project's custom tags (the fence,
	// stops, magic, comment, error classes): the simulator's front speaks it.
	DialectCTrader Dialect = "ctrader"
	// DialectFIX44 is standard FIX 4.4 only: no custom tag, no SecurityList (the symbols
	// are configured), no position ids in fills.
	DialectFIX44 Dialect = "fix44"
)

// DefaultDialect is the dialect when neither the account nor the node names one.
const DefaultDialect = DialectCTrader

// Dialects lists every dialect, for flags and validation.
var Dialects = []Dialect{DialectCTrader, DialectFIX44}

// ParseDialect reads a dialect name; "" is the empty dialect (the default applies).
func ParseDialect(s string) (Dialect, error) {
	d := Dialect(strings.TrimSpace(s))
	if d == "" {
		return "", nil
	}
	for _, k := range Dialects {
		if d == k {
			return d, nil
		}
	}
	return "", fmt.Errorf("FIX dialect %q: want one of %s", s, strings.Join(dialectNames(), ", "))
}

func dialectNames() []string {
	out := make([]string, len(Dialects))
	for i, d := range Dialects {
		out[i] = string(d)
	}
	return out
}

// Features are what a dialect lets the broker use.
type Features struct {
	// Fence: every order carries its token (9001) and deadline (9003), for a venue that
	// refuses stale and late orders. Without it the gate before the send is the only guard.
	Fence bool
	// OrderTags: orders carry the node (9002), stops (9010/9011), magic (9012) and
	// comment (9013); without them the copy marker goes in Text (58) and a position's
	// stops are separate resting orders (a Stop order for the SL, a Limit order for the
	// TP, GTC, on the opposite side), changed by OrderCancelReplaceRequest (G) and removed
	// by OrderCancelRequest (F).
	OrderTags bool
	// SecurityList: symbols come from SecurityListRequest (x); without it from the
	// configured symbol list.
	SecurityList bool
	// PositionIDs: fills name the position (721) and a close names the position it
	// closes; without them a close is an opposite order for the position's volume.
	PositionIDs bool
	// Collateral: the venue answers CollateralInquiry (BB), and a refusal of it is an
	// error. Without it CollateralInquiry is optional: a venue that refuses it does not say
	// the balance and equity, and Account reports them unknown.
	Collateral bool
}

// Features returns the dialect's features ("" is the default dialect).
func (d Dialect) Features() Features {
	if d == DialectFIX44 {
		return Features{}
	}
	return Features{Fence: true, OrderTags: true, SecurityList: true, PositionIDs: true, Collateral: true}
}

// Or returns d, or def when d is empty.
func (d Dialect) Or(def Dialect) Dialect {
	if d == "" {
		return def
	}
	return d
}
