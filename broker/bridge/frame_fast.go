package bridge

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/snapcopier/copier/internal/jsonplain"
)

// decodeFrameFast decodes the frames peers actually send without encoding/json's
// reflection: a JSON object of the frame's own members, each at most once, spelled as
// PROTOCOL.md spells them, with plain strings (no escapes), plain integers and any valid
// JSON as params, result and event. It answers ok false for anything else (an error
// member, null, an escape, an unknown or repeated member, a number with a fraction or out
// of range, malformed JSON, ...), and the caller decodes the payload with encoding/json,
// which then decides what the frame holds or why it is malformed: what it returns with ok
// is exactly what json.Unmarshal would (TestDecodeFrameFastIsUnmarshal). A profile of the
// bridge's order round trip put 12 % of the process's CPU in json.Unmarshal of the frame.
func decodeFrameFast(p []byte) (f *inFrame, ok bool) {
	d := fastDecoder{p: p}
	f = new(inFrame)
	if !d.object(frameMembers, func(m int) bool { return d.member(f, m) }) {
		return nil, false
	}
	return f, true
}

// object reads a whole payload that is one JSON object whose member names are all in
// members, each at most once and without escapes; read reads the value of each.
func (d *fastDecoder) object(members map[string]int, read func(member int) bool) bool {
	return d.inner(members, read) && d.end()
}

// inner reads one JSON object as object does, where it stands: what follows is the
// caller's to read.
func (d *fastDecoder) inner(members map[string]int, read func(member int) bool) bool {
	d.space()
	if !d.byte('{') {
		return false
	}
	var seen uint64
	d.space()
	if d.byte('}') {
		return true
	}
	for {
		d.space()
		key, ok := d.plainString()
		if !ok {
			return false
		}
		m, ok := members[string(key)]
		if !ok || seen&(1<<m) != 0 {
			return false
		}
		seen |= 1 << m
		d.space()
		if !d.byte(':') {
			return false
		}
		d.space()
		if !read(m) {
			return false
		}
		d.space()
		if d.byte(',') {
			continue
		}
		return d.byte('}')
	}
}

// frame members the fast decoder takes, by their name on the wire.
const (
	memberType = iota
	memberID
	memberMethod
	memberSession
	memberSub
	memberTimeout
	memberParams
	memberResult
	memberEvent
	memberReason
	memberVersion
	memberToken
	memberName
	memberMaxInflight
	memberIdleTimeout
)

var frameMembers = map[string]int{
	"type": memberType, "id": memberID, "method": memberMethod, "session": memberSession, "sub": memberSub,
	"timeout_ms": memberTimeout, "params": memberParams, "result": memberResult, "event": memberEvent,
	"reason": memberReason, "version": memberVersion, "token": memberToken, "name": memberName,
	"max_inflight": memberMaxInflight, "idle_timeout_ms": memberIdleTimeout,
}

// fastDecoder reads p from i on; every method returns false (leaving i anywhere) when the
// input is not of the plain form it takes.
type fastDecoder struct {
	p []byte
	i int
}

func (d *fastDecoder) space() {
	for d.i < len(d.p) {
		switch d.p[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// byte consumes c if it is next.
func (d *fastDecoder) byte(c byte) bool {
	if d.i < len(d.p) && d.p[d.i] == c {
		d.i++
		return true
	}
	return false
}

// end reports whether only whitespace follows.
func (d *fastDecoder) end() bool {
	d.space()
	return d.i == len(d.p)
}

func (d *fastDecoder) member(f *inFrame, m int) bool {
	switch m {
	case memberType:
		return d.text(&f.Type)
	case memberMethod:
		return d.text(&f.Method)
	case memberReason:
		return d.text(&f.Reason)
	case memberToken:
		return d.text(&f.Token)
	case memberName:
		return d.text(&f.Name)
	case memberID:
		return d.unsigned(&f.ID)
	case memberSession:
		return d.unsigned(&f.Session)
	case memberSub:
		return d.unsigned(&f.Sub)
	case memberTimeout:
		return d.signed(&f.Timeout)
	case memberIdleTimeout:
		return d.signed(&f.IdleTimeout)
	case memberVersion:
		return d.signedInt(&f.Version)
	case memberMaxInflight:
		return d.signedInt(&f.MaxInflight)
	case memberParams:
		return d.raw(&f.Params)
	case memberResult:
		return d.raw(&f.Result)
	case memberEvent:
		return d.raw(&f.Event)
	}
	return false
}

// text reads a plain string that is valid UTF-8 (encoding/json replaces invalid bytes).
func (d *fastDecoder) text(v *string) bool {
	s, ok := d.plainString()
	if !ok || !utf8.Valid(s) {
		return false
	}
	*v = string(s)
	return true
}

func (d *fastDecoder) unsigned(v *uint64) bool {
	n, ok := d.integer(false, 64)
	*v = n
	return ok
}

func (d *fastDecoder) signed(v *int64) bool {
	n, ok := d.integer(true, 64)
	*v = int64(n)
	return ok
}

func (d *fastDecoder) signedInt(v *int) bool {
	n, ok := d.integer(true, strconv.IntSize)
	*v = int(n)
	return ok
}

// raw reads any JSON value but null (encoding/json's RawMessage rules decide that) and
// keeps a copy: the payload's buffer is the frame reader's.
func (d *fastDecoder) raw(v *json.RawMessage) bool {
	start := d.i
	if d.i < len(d.p) && d.p[d.i] == 'n' || !d.value(0) {
		return false
	}
	*v = append(json.RawMessage(nil), d.p[start:d.i]...)
	return true
}

// plainString reads a string without escapes or control characters and returns its
// bytes (not copied).
func (d *fastDecoder) plainString() ([]byte, bool) {
	if !d.byte('"') {
		return nil, false
	}
	start := d.i
	for d.i < len(d.p) {
		c := d.p[d.i]
		switch {
		case c == '"':
			d.i++
			return d.p[start : d.i-1], true
		case c == '\\' || c < 0x20:
			return nil, false
		}
		d.i++
	}
	return nil, false
}

// integer reads an integer in JSON's grammar (no fraction or exponent; a sign only when
// signed) that fits in bits, as a two's-complement uint64.
func (d *fastDecoder) integer(signed bool, bits int) (uint64, bool) {
	start := d.i
	if signed && d.i < len(d.p) && d.p[d.i] == '-' {
		d.i++
	}
	digits := d.i
	for d.i < len(d.p) && d.p[d.i] >= '0' && d.p[d.i] <= '9' {
		d.i++
	}
	n := d.i - digits
	if n == 0 || (n > 1 && d.p[digits] == '0') {
		return 0, false
	}
	if d.i < len(d.p) {
		switch d.p[d.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	s := string(d.p[start:d.i])
	if signed {
		v, err := strconv.ParseInt(s, 10, bits)
		return uint64(v), err == nil
	}
	v, err := strconv.ParseUint(s, 10, bits)
	return v, err == nil
}

// maxFastDepth is the deepest nesting the fast decoder follows; deeper values go to
// encoding/json (which has its own, much higher, limit).
const maxFastDepth = 64

// value skips one valid JSON value.
func (d *fastDecoder) value(depth int) bool {
	if d.i >= len(d.p) || depth > maxFastDepth {
		return false
	}
	switch c := d.p[d.i]; {
	case c == '{':
		d.i++
		return d.items('}', func() bool {
			if !d.str() {
				return false
			}
			d.space()
			if !d.byte(':') {
				return false
			}
			d.space()
			return d.value(depth + 1)
		})
	case c == '[':
		d.i++
		return d.items(']', func() bool { return d.value(depth + 1) })
	case c == '"':
		return d.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	}
	return false
}

// items skips the items of an object or array up to closer, each read by item, with
// commas between them.
func (d *fastDecoder) items(closer byte, item func() bool) bool {
	d.space()
	if d.byte(closer) {
		return true
	}
	for {
		d.space()
		if !item() {
			return false
		}
		d.space()
		if d.byte(',') {
			continue
		}
		return d.byte(closer)
	}
}

// str skips a string: escapes as JSON defines them, no control characters (other bytes,
// invalid UTF-8 included, are taken as they are, as encoding/json's validity check does).
func (d *fastDecoder) str() bool {
	if !d.byte('"') {
		return false
	}
	for d.i < len(d.p) {
		c := d.p[d.i]
		d.i++
		switch {
		case c == '"':
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if d.i >= len(d.p) {
				return false
			}
			e := d.p[d.i]
			d.i++
			switch e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if d.i+4 > len(d.p) {
					return false
				}
				for _, h := range d.p[d.i : d.i+4] {
					if !isHex(h) {
						return false
					}
				}
				d.i += 4
			default:
				return false
			}
		}
	}
	return false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// number skips a number in JSON's grammar.
func (d *fastDecoder) number() bool {
	d.byte('-')
	switch {
	case d.byte('0'):
	case d.i < len(d.p) && d.p[d.i] >= '1' && d.p[d.i] <= '9':
		d.digits()
	default:
		return false
	}
	if d.byte('.') && !d.digits() {
		return false
	}
	if d.byte('e') || d.byte('E') {
		if !d.byte('+') {
			d.byte('-')
		}
		if !d.digits() {
			return false
		}
	}
	return true
}

// digits skips one or more digits.
func (d *fastDecoder) digits() bool {
	start := d.i
	for d.i < len(d.p) && d.p[d.i] >= '0' && d.p[d.i] <= '9' {
		d.i++
	}
	return d.i > start
}

func (d *fastDecoder) literal(s string) bool {
	if len(d.p)-d.i < len(s) || string(d.p[d.i:d.i+len(s)]) != s {
		return false
	}
	d.i += len(s)
	return true
}

// encodeFrameFast writes the frame encodeFrameJSON writes, byte for byte, without
// encoding/json's reflection over the frame itself (params, result and event are still
// encoded by it); it declines (ok false) a frame with an error member or a string that
// is not plain printable ASCII without quotes or backslashes, and one whose value fails
// to encode, for encodeFrameJSON to write or refuse.
func encodeFrameFast(f *outFrame) (b []byte, ok bool) {
	if f.Error != nil || !plainString(f.Type) || !plainString(f.Method) || !plainString(f.Reason) || !plainString(f.Token) || !plainString(f.Name) {
		return nil, false
	}
	buf := bytes.NewBuffer(make([]byte, 4, 512)) // an order request is about 300 bytes
	buf.WriteString(`{"type":"`)
	buf.WriteString(f.Type)
	buf.WriteByte('"')
	uintMember(buf, "id", f.ID)
	stringMember(buf, "method", f.Method)
	uintMember(buf, "session", f.Session)
	uintMember(buf, "sub", f.Sub)
	intMember(buf, "timeout_ms", f.Timeout)
	if !valueMember(buf, "params", f.Params) || !valueMember(buf, "result", f.Result) || !valueMember(buf, "event", f.Event) {
		return nil, false
	}
	stringMember(buf, "reason", f.Reason)
	intMember(buf, "version", int64(f.Version))
	stringMember(buf, "token", f.Token)
	stringMember(buf, "name", f.Name)
	intMember(buf, "max_inflight", int64(f.MaxInflight))
	intMember(buf, "idle_timeout_ms", f.IdleTimeout)
	buf.WriteByte('}')
	b = buf.Bytes()
	n := len(b) - 4
	if n > MaxFrameSize {
		return nil, false
	}
	binary.BigEndian.PutUint32(b, uint32(n))
	return b, true
}

// plainString reports whether the frame's encoder (no HTML escaping) writes s as it is.
func plainString(s string) bool { return jsonplain.String(s, false) }

// The members below are omitted when empty, as their omitempty tags say.

func writeMemberName(buf *bytes.Buffer, name string) {
	buf.WriteString(`,"`)
	buf.WriteString(name)
	buf.WriteString(`":`)
}

func stringMember(buf *bytes.Buffer, name, v string) {
	if v != "" {
		writeMemberName(buf, name)
		buf.WriteByte('"')
		buf.WriteString(v)
		buf.WriteByte('"')
	}
}

func uintMember(buf *bytes.Buffer, name string, v uint64) {
	if v != 0 {
		writeMemberName(buf, name)
		buf.Write(strconv.AppendUint(buf.AvailableBuffer(), v, 10))
	}
}

func intMember(buf *bytes.Buffer, name string, v int64) {
	if v != 0 {
		writeMemberName(buf, name)
		buf.Write(strconv.AppendInt(buf.AvailableBuffer(), v, 10))
	}
}

// valueMember encodes v (omitted when nil) as encodeFrameJSON's encoder does, without
// escaping HTML; false when encoding/json refuses it.
func valueMember(buf *bytes.Buffer, name string, v any) bool {
	if v == nil {
		return true
	}
	writeMemberName(buf, name)
	if b, ok := appendOrderValue(buf.AvailableBuffer(), v); ok {
		buf.Write(b)
		return true
	}
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return false
	}
	buf.Truncate(buf.Len() - 1) // Encode appends a newline
	return true
}

// decodeOrderResultFast decodes an order's result (the client reads one per order) as
// json.Unmarshal would, for the plain form the bridge server writes: the four members and
// the optional funds object, plain numbers, the server time as a plain string (parsed by
// time.Time's own UnmarshalJSON, as encoding/json does); false for anything else, and w is
// then to be decoded by json.Unmarshal (TestDecodeOrderResultFastIsUnmarshal).
func decodeOrderResultFast(p []byte, w *wireOrderResult) bool {
	d := fastDecoder{p: p}
	r := *w // members the payload lacks keep their values, as with json.Unmarshal
	ok := d.object(orderResultMembers, func(m int) bool {
		switch m {
		case 0:
			return d.signed(&r.Ticket)
		case 1:
			return d.float(&r.Price)
		case 2:
			return d.float(&r.Volume)
		case 4:
			var f wireFunds
			if r.Funds != nil {
				f = *r.Funds // as json.Unmarshal: members the object lacks keep their values
			}
			if !d.inner(fundsMembers, func(m int) bool {
				if m == 0 {
					return d.float(&f.Balance)
				}
				return d.float(&f.Equity)
			}) {
				return false
			}
			r.Funds = &f
			return true
		default:
			start := d.i
			if _, ok := d.plainString(); !ok {
				return false
			}
			return r.ServerTime.UnmarshalJSON(d.p[start:d.i]) == nil
		}
	})
	if ok {
		*w = r
	}
	return ok
}

var (
	orderResultMembers = map[string]int{"ticket": 0, "price": 1, "volume": 2, "server_time": 3, "funds": 4}
	fundsMembers       = map[string]int{"balance": 0, "equity": 1}
)

// float reads a number in JSON's grammar that strconv.ParseFloat takes as a float64.
func (d *fastDecoder) float(v *float64) bool {
	start := d.i
	if !d.number() {
		return false
	}
	f, err := strconv.ParseFloat(string(d.p[start:d.i]), 64)
	*v = f
	return err == nil
}
