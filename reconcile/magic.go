package reconcile

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// MagicRange is an inclusive range of master magic numbers. In JSON it is a string, "42" or
// "1010-1019"; a bare number is accepted too.
type MagicRange struct {
	From int64 // first magic number of the range
	To   int64 // last magic number of the range (From for a single number)
}

// ParseMagicRange parses "42" or "1010-1019" (spaces around the dash are allowed). Magic
// numbers are ≥ 0 and From ≤ To.
func ParseMagicRange(s string) (MagicRange, error) {
	s = strings.TrimSpace(s)
	lo, hi, isRange := strings.Cut(s, "-")
	from, err := strconv.ParseInt(strings.TrimSpace(lo), 10, 64)
	if err != nil {
		return MagicRange{}, fmt.Errorf("magic range %q: want a number or from-to", s)
	}
	to := from
	if isRange {
		if to, err = strconv.ParseInt(strings.TrimSpace(hi), 10, 64); err != nil {
			return MagicRange{}, fmt.Errorf("magic range %q: want a number or from-to", s)
		}
	}
	r := MagicRange{From: from, To: to}
	if err := r.check(); err != nil {
		return MagicRange{}, err
	}
	return r, nil
}

func (r MagicRange) check() error {
	if r.From < 0 || r.To < 0 {
		return fmt.Errorf("magic range %s: magic numbers are ≥ 0", r)
	}
	if r.From > r.To {
		return fmt.Errorf("magic range %s: from exceeds to", r)
	}
	return nil
}

// Contains reports whether From ≤ magic ≤ To.
func (r MagicRange) Contains(magic int64) bool { return r.From <= magic && magic <= r.To }

// String returns "42" or "1010-1019".
func (r MagicRange) String() string {
	if r.From == r.To {
		return strconv.FormatInt(r.From, 10)
	}
	return strconv.FormatInt(r.From, 10) + "-" + strconv.FormatInt(r.To, 10)
}

// MarshalJSON writes the range as a string.
func (r MagicRange) MarshalJSON() ([]byte, error) { return json.Marshal(r.String()) }

// UnmarshalJSON reads "42", "1010-1019" or 42.
func (r *MagicRange) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int64
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("magic range: want a string like \"1010-1019\" or a number, got %s", b)
		}
		s = strconv.FormatInt(n, 10)
	}
	v, err := ParseMagicRange(s)
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// anyContains reports whether one of rs contains magic.
func anyContains(rs []MagicRange, magic int64) bool {
	for _, r := range rs {
		if r.Contains(magic) {
			return true
		}
	}
	return false
}
