package reconcile

import (
	"strconv"
	"strings"

	"github.com/snapcopier/copier/broker"
)

// markerPrefix starts every copy's comment.
const markerPrefix = "mc"

// Marker returns the comment of a copy of masterTicket: "mc<masterTicket>". It is at most 21
// characters (19 digits), within broker.MaxCommentLen, which leaves servers room to append
// their own text without cutting the ticket.
func Marker(masterTicket int64) string {
	var b [len(markerPrefix) + 20]byte // built on the stack: one allocation, the string's
	return string(strconv.AppendInt(append(b[:0], markerPrefix...), masterTicket, 10))
}

// ParseMarker returns the master ticket a copy's comment names. It accepts what servers do
// to comments: text appended after the digits ("mc123[sl]", "mc123 from #5", "mc123[tp]"),
// leading spaces, and an appended text cut at the comment limit. It returns ok false when
// the comment does not start with the marker (overwritten: "from #5", "[sl]", ""), when the
// digits are not a positive ticket (leading zero, overflow, "mc"), and when the comment ends
// right after the digits at broker.MaxCommentLen characters, where the ticket itself may
// have been cut.
func ParseMarker(comment string) (ticket int64, ok bool) {
	s := strings.TrimLeft(comment, " \t")
	if !strings.HasPrefix(s, markerPrefix) {
		return 0, false
	}
	digits := s[len(markerPrefix):]
	n := 0
	for n < len(digits) && digits[n] >= '0' && digits[n] <= '9' {
		n++
	}
	if n == 0 || digits[0] == '0' || n > 19 {
		return 0, false
	}
	if n == len(digits) && len(comment) >= broker.MaxCommentLen {
		return 0, false // the comment was cut inside the digits
	}
	t, err := strconv.ParseInt(digits[:n], 10, 64)
	if err != nil || t <= 0 {
		return 0, false
	}
	return t, true
}
