package fix

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/quickfixgo/quickfix"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix/fixwire"
)

// FuzzVenueMessage feeds untrusted message bodies, as a venue would send them, through every
// decoder of the FIX broker: the message parser, the reply classifier, the order-report
// and position readers and the security-list reader. None may panic, a reject always
// maps to a broker error class, and nothing decoded carries NaN or an infinity into the
// engine.
func FuzzVenueMessage(f *testing.F) {
	for _, body := range []string{
		"35=0|",
		"35=8|11=o1|39=2|150=F|721=7001|31=1.1|32=100000|60=20260101-00:00:00.000|",
		"35=8|11=o1|39=8|150=8|103=6|58=duplicate|9002=fenced|",
		"35=AP|721=12|55=1|704=100000|730=1.2|",
		"35=y|320=s1|560=0|146=2|55=1|1007=EURUSD|1008=5|231=100000|55=2|1007=GBPUSD|1008=-400|",
		"35=9|11=o1|39=8|434=1|102=1|58=x|",
	} {
		f.Add([]byte(body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		// The body is framed as quickfixgo's wire reader frames what it hands the parser:
		// 8= and 9= first, and the frame ends at the first SOH + "10=" after them, so a
		// body always ends with SOH. ParseMessage itself indexes those fields before it
		// checks them and panics on input the wire reader never produces (fuzzing found
		// "8=\x01" and a body "35=" without its SOH).
		if !bytes.HasSuffix(body, []byte{1}) {
			body = append(body, 1)
		}
		raw := fixMessage(string(body))
		m := quickfix.NewMessage()
		if err := quickfix.ParseMessage(m, bytes.NewBuffer(append([]byte(nil), raw...))); err != nil {
			return
		}
		m.Body.SetString(tagRaw, string(raw))
		if err := replyError(m); err == nil || !isClassified(err) {
			t.Fatalf("reject classified as %v", err)
		}
		var res broker.OrderResult
		if _, err := orderReply(&res, 100000)(m); err != nil && !isClassified(err) {
			t.Fatalf("order reply error %v has no broker class", err)
		}
		finite(t, "order result", res.Price, res.Volume)
		table := &symbolTable{byName: map[string]string{}, byID: map[string]broker.SymbolSpec{}}
		for _, e := range fixwire.GroupEntries(string(raw), fixwire.TagNoRelatedSym, fixwire.TagSymbol, groupTags) {
			table.add(e)
		}
		for _, sp := range table.list {
			finite(t, "symbol "+sp.Name, sp.ContractSize, sp.MinLot, sp.MaxLot, sp.LotStep, sp.Point, sp.Bid, sp.Ask)
			if sp.Point <= 0 {
				t.Fatalf("symbol %q has point %v", sp.Name, sp.Point)
			}
		}
		p := position(m, table)
		finite(t, "position", p.Volume, p.OpenPrice, p.SL, p.TP)
	})
}

func isClassified(err error) bool {
	for _, class := range []error{broker.ErrRetryable, broker.ErrPermanent, broker.ErrFenced, broker.ErrUnknownOutcome,
		broker.ErrDisconnected, broker.ErrMarketClosed, broker.ErrExpired} {
		if errors.Is(err, class) {
			return true
		}
	}
	return false
}

func finite(t *testing.T, what string, vs ...float64) {
	t.Helper()
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("%s carries %v", what, v)
		}
	}
}

// fixMessage frames a body ("|" for SOH) with its BeginString, BodyLength and CheckSum.
func fixMessage(body string) []byte {
	b := bytes.ReplaceAll([]byte(body), []byte("|"), []byte{1})
	out := append([]byte(fmt.Sprintf("8=FIX.4.4\x019=%d\x01", len(b))), b...)
	sum := 0
	for _, c := range out {
		sum += int(c)
	}
	return append(out, []byte(fmt.Sprintf("10=%03d\x01", sum%256))...)
}
