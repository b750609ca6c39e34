package reconcile

import (
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/snapcopier/copier/broker"
)

func TestMarker(t *testing.T) {
	if got := Marker(123); got != "mc123" {
		t.Fatalf("Marker(123) = %q", got)
	}
	if got := Marker(math.MaxInt64); len(got) > broker.MaxCommentLen {
		t.Fatalf("Marker(MaxInt64) = %q is longer than %d", got, broker.MaxCommentLen)
	}
}

func TestParseMarker(t *testing.T) {
	cases := []struct {
		comment string
		ticket  int64
		ok      bool
	}{
		{"mc123", 123, true},
		{"mc123[sl]", 123, true},
		{"mc123[tp]", 123, true},
		{"mc123 from #5", 123, true},
		{"mc9223372036854775807", math.MaxInt64, true},
		{"  mc77", 77, true},
		{"mc123 partial close of a very lo", 123, true}, // appended text cut at 31 characters
		{"from #123", 0, false},                         // MT4 partial close overwrote it
		{"[sl]", 0, false},
		{"", 0, false},
		{"mc", 0, false},
		{"mc[sl]", 0, false},
		{"mc0", 0, false},
		{"mc0123", 0, false},
		{"mc-5", 0, false},
		{"MC123", 0, false},
		{"copy mc123", 0, false},
		{"mc99999999999999999999", 0, false},          // overflow
		{"mc12345678901234567890123456789", 0, false}, // cut inside the digits
	}
	for _, tc := range cases {
		ticket, ok := ParseMarker(tc.comment)
		if ticket != tc.ticket || ok != tc.ok {
			t.Errorf("ParseMarker(%q) = %d, %v; want %d, %v", tc.comment, ticket, ok, tc.ticket, tc.ok)
		}
	}
}

// TestMarkerRoundTrip: the marker of any positive ticket parses back, alone or with
// whatever a server appends, cut at the comment limit.
func TestMarkerRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ticket := rapid.Int64Range(1, math.MaxInt64).Draw(t, "ticket")
		tail := rapid.SampledFrom([]string{"", "[sl]", "[tp]", " from #42", " [so 50%/100.0/50.0]", "x"}).Draw(t, "tail")
		c := Marker(ticket) + tail
		if len(c) > broker.MaxCommentLen {
			c = c[:broker.MaxCommentLen]
		}
		if got, ok := ParseMarker(c); !ok || got != ticket {
			t.Fatalf("ParseMarker(%q) = %d, %v; want %d", c, got, ok, ticket)
		}
	})
}
