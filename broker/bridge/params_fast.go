package bridge

import (
	"encoding/hex"
	"strconv"

	"github.com/snapcopier/copier/internal/jsonplain"
)

// The order requests and their result travel with every order; these write and read them
// without encoding/json's reflection, for the plain values they carry, and leave anything
// else to encoding/json (TestOrderParamsFastAreEncodingJSON): what they write is what
// encodeFrameJSON's encoder writes, what they read is what json.Unmarshal reads.

// appendOrderValue appends v's JSON when it is an order request or result written the
// plain way; false for any other value.
func appendOrderValue(b []byte, v any) ([]byte, bool) {
	switch w := v.(type) {
	case wireOpen:
		b, ok := appendOrder(b, &w.wireOrder)
		b, ok2 := appendString(b, `,"symbol":`, w.Symbol)
		b = appendInt(b, `,"side":`, int64(w.Side))
		b = appendInt(b, `,"type":`, int64(w.Type))
		b, ok3 := appendFloats(b, []string{`,"volume":`, `,"price":`, `,"sl":`, `,"tp":`}, w.Volume, w.Price, w.SL, w.TP)
		b = appendInt(b, `,"magic":`, w.Magic)
		b, ok4 := appendString(b, `,"comment":`, w.Comment)
		ok5 := true
		if w.WorstPrice != 0 { // omitempty
			b, ok5 = appendFloats(b, []string{`,"worst_price":`}, w.WorstPrice)
		}
		return append(b, '}'), ok && ok2 && ok3 && ok4 && ok5
	case wireClose:
		b, ok := appendOrder(b, &w.wireOrder)
		b = appendInt(b, `,"ticket":`, w.Ticket)
		b, ok2 := appendFloats(b, []string{`,"volume":`}, w.Volume)
		return append(b, '}'), ok && ok2
	case wireModify:
		b, ok := appendOrder(b, &w.wireOrder)
		b = appendInt(b, `,"ticket":`, w.Ticket)
		b, ok2 := appendFloats(b, []string{`,"sl":`, `,"tp":`}, w.SL, w.TP)
		return append(b, '}'), ok && ok2
	case wireOrderResult:
		b = appendInt(b, `{"ticket":`, w.Ticket)
		b, ok := appendFloats(b, []string{`,"price":`, `,"volume":`}, w.Price, w.Volume)
		b = append(b, `,"server_time":"`...)
		b, ok2 := jsonplain.AppendTime(b, w.ServerTime)
		b = append(b, '"')
		ok3 := true
		if w.Funds != nil {
			b, ok3 = appendFloats(b, []string{`,"funds":{"balance":`, `,"equity":`}, w.Funds.Balance, w.Funds.Equity)
			b = append(b, '}')
		}
		return append(b, '}'), ok && ok2 && ok3
	}
	return b, false
}

// appendOrder opens the object and writes the members every order request starts with.
func appendOrder(b []byte, o *wireOrder) ([]byte, bool) {
	b = append(b, `{"request_id":"`...)
	var id [36]byte
	hex.Encode(id[0:8], o.RequestID[0:4])
	hex.Encode(id[9:13], o.RequestID[4:6])
	hex.Encode(id[14:18], o.RequestID[6:8])
	hex.Encode(id[19:23], o.RequestID[8:10])
	hex.Encode(id[24:], o.RequestID[10:])
	id[8], id[13], id[18], id[23] = '-', '-', '-', '-'
	b = append(b, id[:]...)
	b = appendInt(b, `","token":`, o.Token)
	b, ok := appendString(b, `,"node":`, o.Node)
	if o.Deadline.IsZero() { // omitzero
		return b, ok
	}
	b = append(b, `,"deadline":"`...)
	b, ok2 := jsonplain.AppendTime(b, o.Deadline)
	return append(b, '"'), ok && ok2
}

func appendInt(b []byte, member string, v int64) []byte {
	return strconv.AppendInt(append(b, member...), v, 10)
}

func appendString(b []byte, member, s string) ([]byte, bool) {
	b = append(append(b, member...), '"')
	return append(append(b, s...), '"'), plainString(s)
}

func appendFloats(b []byte, members []string, vs ...float64) ([]byte, bool) {
	ok := true
	for i, v := range vs {
		var plain bool
		b, plain = jsonplain.AppendFloat(append(b, members[i]...), v)
		ok = ok && plain
	}
	return b, ok
}

// orderFields points at the members of one order request a payload may set (nil: not a
// member of that request).
type orderFields struct {
	order                 *wireOrder
	symbol, comment       *string
	side, typ             *int8
	volume, price, sl, tp *float64
	worst                 *float64
	magic, ticket         *int64
}

var orderMembers = map[string]int{"request_id": 0, "token": 1, "node": 2, "deadline": 3, "symbol": 4, "side": 5,
	"type": 6, "volume": 7, "price": 8, "sl": 9, "tp": 10, "magic": 11, "comment": 12, "ticket": 13, "worst_price": 14}

// decodeOrderParamsFast decodes an order request's params into v (a *wireOpen,
// *wireClose or *wireModify) as json.Unmarshal would, for the plain form; false for
// anything else (any other type, a member the request does not have, an escape, null, a
// number out of range, ...), and v is then untouched.
func decodeOrderParamsFast(p []byte, v any) bool {
	switch w := v.(type) {
	case *wireOpen:
		c := *w
		if decodeOrderFields(p, orderFields{order: &c.wireOrder, symbol: &c.Symbol, comment: &c.Comment, side: &c.Side, typ: &c.Type,
			volume: &c.Volume, price: &c.Price, sl: &c.SL, tp: &c.TP, worst: &c.WorstPrice, magic: &c.Magic}) {
			*w = c
			return true
		}
	case *wireClose:
		c := *w
		if decodeOrderFields(p, orderFields{order: &c.wireOrder, volume: &c.Volume, ticket: &c.Ticket}) {
			*w = c
			return true
		}
	case *wireModify:
		c := *w
		if decodeOrderFields(p, orderFields{order: &c.wireOrder, sl: &c.SL, tp: &c.TP, ticket: &c.Ticket}) {
			*w = c
			return true
		}
	}
	return false
}

func decodeOrderFields(p []byte, f orderFields) bool {
	d := fastDecoder{p: p}
	return d.object(orderMembers, func(m int) bool {
		switch m {
		case 0:
			s, ok := d.plainString()
			return ok && f.order.RequestID.UnmarshalText(s) == nil // as encoding/json calls it
		case 1:
			return d.signed(&f.order.Token)
		case 2:
			return d.text(&f.order.Node)
		case 3:
			start := d.i
			_, ok := d.plainString()
			return ok && f.order.Deadline.UnmarshalJSON(d.p[start:d.i]) == nil
		case 4:
			return f.symbol != nil && d.text(f.symbol)
		case 5:
			return f.side != nil && d.int8(f.side)
		case 6:
			return f.typ != nil && d.int8(f.typ)
		case 7:
			return f.volume != nil && d.float(f.volume)
		case 8:
			return f.price != nil && d.float(f.price)
		case 9:
			return f.sl != nil && d.float(f.sl)
		case 10:
			return f.tp != nil && d.float(f.tp)
		case 11:
			return f.magic != nil && d.signed(f.magic)
		case 12:
			return f.comment != nil && d.text(f.comment)
		case 13:
			return f.ticket != nil && d.signed(f.ticket)
		default:
			return f.worst != nil && d.float(f.worst)
		}
	})
}

func (d *fastDecoder) int8(v *int8) bool {
	n, ok := d.integer(true, 8)
	*v = int8(n)
	return ok
}
