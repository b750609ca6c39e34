package bridge

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/snapcopier/copier/broker"
)

// TestWireAccountCarriesEquityUnknown: an account whose equity the trade server does not
// say crosses the bridge as such (equity_unknown), not as an equity of 0; a known one
// leaves the field out, as an older peer sends it.
func TestWireAccountCarriesEquityUnknown(t *testing.T) {
	for _, in := range []broker.AccountInfo{
		{Login: "f1", Mode: broker.Netting, EquityUnknown: true},
		{Login: "f2", Currency: "USD", Balance: 1000, Equity: 990, Leverage: 100, Mode: broker.Hedging},
	} {
		doc, err := json.Marshal(toWireAccount(in))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(doc), `"equity_unknown":true`); got != in.EquityUnknown {
			t.Fatalf("%s: wire %s", in.Login, doc)
		}
		var w wireAccount
		if err := json.Unmarshal(doc, &w); err != nil {
			t.Fatal(err)
		}
		if out := w.toBroker(); out != in {
			t.Fatalf("round trip: got %+v, want %+v", out, in)
		}
	}
}
