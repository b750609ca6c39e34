// Package jsonplain writes the JSON that encoding/json writes for the plain values hot
// paths carry (printable ASCII strings, floats without an exponent, times in years
// 0-9999), without reflection. Each function reports false for a value it does not write
// the plain way; the caller then hands the whole value to encoding/json, so what the
// hand-written encoders produce is always byte for byte what encoding/json would.
package jsonplain

import (
	"math"
	"strconv"
	"time"
)

// String reports whether encoding/json writes s as it is between its quotes: printable
// ASCII without the characters it escapes (" and \, and <, > and & when html is set, as
// json.Marshal does; an Encoder with SetEscapeHTML(false) does not).
func String(s string, html bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || html && (c == '<' || c == '>' || c == '&') {
			return false
		}
	}
	return true
}

// AppendFloat appends f as encoding/json writes a float64 in the range it writes without
// an exponent (0, or 1e-6 ≤ |f| < 1e21); false otherwise.
func AppendFloat(b []byte, f float64) ([]byte, bool) {
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) || math.IsNaN(f) {
		return b, false
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64), true
}

// AppendTime appends t as time.Time's MarshalJSON writes it, without the quotes; false
// where MarshalJSON fails (a year outside 0-9999, a zone offset of 24 hours or more, or
// one with seconds).
func AppendTime(b []byte, t time.Time) ([]byte, bool) {
	n0 := len(b)
	b = t.AppendFormat(b, time.RFC3339Nano)
	if len(b)-n0 < len("2006-01-02T15:04:05Z") || b[n0+len("2006")] != '-' {
		return b, false
	}
	if b[len(b)-1] != 'Z' {
		c := b[len(b)-len("Z07:00")]
		hour := 10*int(b[len(b)-len("07:00")]-'0') + int(b[len(b)-len("7:00")]-'0')
		if '0' <= c && c <= '9' || hour >= 24 {
			return b, false
		}
	}
	return b, true
}
