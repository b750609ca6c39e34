package fixwire

import (
	"bytes"
	"testing"
	"time"

	"github.com/quickfixgo/quickfix"
)

func TestParseDialect(t *testing.T) {
	for in, want := range map[string]Dialect{"": "", " ctrader ": DialectCTrader, "fix44": DialectFIX44} {
		if d, err := ParseDialect(in); err != nil || d != want {
			t.Errorf("ParseDialect(%q) = %q, %v; want %q", in, d, err, want)
		}
	}
	for _, in := range []string{"FIX44", "fix42", "ctrader,fix44"} {
		if _, err := ParseDialect(in); err == nil {
			t.Errorf("ParseDialect(%q) accepted", in)
		}
	}
	if f := DialectFIX44.Features(); f != (Features{}) {
		t.Errorf("fix44 uses %+v, want nothing beyond standard FIX 4.4", f)
	}
	if f := Dialect("").Or(DefaultDialect).Features(); !f.Fence || !f.SecurityList {
		t.Errorf("the default dialect lacks the fence or the SecurityList: %+v", f)
	}
}

// wireMessage builds a NewOrderSingle as it leaves a session (header and trailer filled)
// and parses it back, as a venue receives it.
func wireMessage(t *testing.T, custom bool) *quickfix.Message {
	t.Helper()
	m := quickfix.NewMessage()
	m.Header.SetString(quickfix.Tag(8), BeginString)
	m.Header.SetString(quickfix.Tag(35), MsgNewOrderSingle)
	m.Header.SetString(quickfix.Tag(49), "client")
	m.Header.SetString(quickfix.Tag(56), "venue")
	m.Header.SetInt(quickfix.Tag(34), 2)
	m.Header.SetString(quickfix.Tag(52), time.Now().UTC().Format("20060102-15:04:05.000"))
	m.Body.SetString(TagClOrdID, "c1")
	m.Body.SetString(TagSymbol, "EURUSD")
	m.Body.SetString(TagSide, SideBuy)
	m.Body.SetString(TagTransactTime, FormatTime(time.Now()))
	m.Body.SetString(TagOrderQty, "1000")
	m.Body.SetString(TagOrdType, OrdTypeMarket)
	if custom {
		m.Body.SetString(TagLeaseEpoch, "7")
	}
	p := quickfix.NewMessage()
	if err := quickfix.ParseMessage(p, bytes.NewBufferString(m.String())); err != nil {
		t.Fatal(err)
	}
	return p
}

// The stock dictionary accepts a plain NewOrderSingle and refuses one with a custom tag,
// naming the tag, as a strict venue does.
func TestValidateStock(t *testing.T) {
	if rej := ValidateStock(wireMessage(t, false)); rej != nil {
		t.Fatalf("a standard NewOrderSingle refused: %v", rej)
	}
	rej := ValidateStock(wireMessage(t, true))
	if rej == nil || rej.RefTagID() == nil || *rej.RefTagID() != TagLeaseEpoch {
		t.Fatalf("a NewOrderSingle with tag %d: %v, want it refused naming the tag", TagLeaseEpoch, rej)
	}
}
