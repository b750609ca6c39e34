package jsonplain

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// marshal is encoding/json's encoding of v, with or without HTML escaping.
func marshal(t *testing.T, v any, html bool) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(v); err != nil {
		return "error"
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// TestPlainValuesAreEncodingJSON: whatever the functions write, encoding/json writes the
// same; and they write the common values (so the hot paths do not fall back).
func TestPlainValuesAreEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	floats := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1.08512, 1e-6, 9.99e-7, 1e20, 1e21, 123456789.123, math.MaxFloat64, math.SmallestNonzeroFloat64, math.Inf(1), math.NaN()}
	for range 20000 {
		floats = append(floats, rng.NormFloat64()*math.Pow(10, float64(rng.IntN(50)-25)))
	}
	plain := 0
	for _, f := range floats {
		b, ok := AppendFloat([]byte("x"), f)
		if !ok {
			continue
		}
		plain++
		if got, want := string(b[1:]), marshal(t, f, true); got != want {
			t.Fatalf("%v: wrote %s, encoding/json %s", f, got, want)
		}
	}
	if plain < len(floats)/3 {
		t.Fatalf("only %d of %d floats written plainly", plain, len(floats))
	}
	zones := []*time.Location{time.UTC, time.FixedZone("", 5*3600+1800), time.FixedZone("", -23*3600), time.FixedZone("", 24*3600), time.FixedZone("", 3601)}
	times := []time.Time{{}, time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)}
	for range 5000 {
		times = append(times, time.Unix(rng.Int64N(1<<36)-1<<35, rng.Int64N(1e9)).In(zones[rng.IntN(len(zones))]))
	}
	plain = 0
	for _, tm := range times {
		b, ok := AppendTime(nil, tm)
		want := marshal(t, tm, true)
		if !ok {
			if want != "error" && tm.Year() >= 0 && tm.Year() <= 9999 {
				_, off := tm.Zone()
				if off%60 == 0 && off > -24*3600 && off < 24*3600 {
					t.Fatalf("%v: declined a time encoding/json writes as %s", tm, want)
				}
			}
			continue
		}
		plain++
		if got := `"` + string(b) + `"`; got != want {
			t.Fatalf("%v: wrote %s, encoding/json %s", tm, got, want)
		}
	}
	if plain < len(times)/2 {
		t.Fatalf("only %d of %d times written plainly", plain, len(times))
	}
	for _, s := range []string{"", "EURUSD", "cp:4711 x=1", "a<b", "a&b", `q"`, `b\s`, "tab\t", "é", "\x7f", "\xff"} {
		for _, html := range []bool{true, false} {
			if String(s, html) && `"`+s+`"` != marshal(t, s, html) {
				t.Fatalf("%q (html %v): plain, but encoding/json writes %s", s, html, marshal(t, s, html))
			}
		}
	}
	if !String("a<b&c>", false) || String("a<b", true) {
		t.Fatal("HTML characters: plain only without HTML escaping")
	}
}
