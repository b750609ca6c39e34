package reconcile

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParseSettings parses arbitrary link settings, as an operator (or a compromised
// console client) could store them: an error or valid settings, never a panic; accepted
// settings validate, have no invisible or overlong symbol names, and survive a round trip
// through their JSON unchanged.
func FuzzParseSettings(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"sizing":{"mode":"fixed_lot","fixed_lot":0.1}}`,
		`{"sizing":{"mode":"balance_ratio","multiplier":1.5,"min_lot":0.02,"max_lot":5,"force_min":true},"symbols":{"pairs":{"GER40":"DE40.cash"},"master_suffix":".pro","follower_suffix":".m"},"reverse":true,"filters":{"include_symbols":["EURUSD"],"exclude_symbols":["XAUUSD"],"sides":"buy","magics":["1010-1019","0"],"exclude_magics":["1015"]},"stops":{"mode":"copy"},"limits":{"max_open_copies":10,"max_lots_per_symbol":3},"window":{"max_age_seconds":60,"max_deviation_points":30}}`,
		`{"sizing":{"mode":"risk_percent","risk_percent":1}}`,
		`{"stops":{"mode":"fixed","sl_points":100,"tp_points":200}}`,
		`{"Sizing":{}}`,
		`{"reverse":true,"reverse":false}`,
		`{"filters":{"magics":[42, "7-9"]}}`,
		`{"symbols":{"pairs":{"A\u200b":"B"}}}`,
		`{"sizing":{"fixed_lot":1e300}}`,
		`{} {}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSettings(data)
		if err != nil {
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("accepted settings do not validate: %v", err)
		}
		names := append(append([]string{}, s.Filters.IncludeSymbols...), s.Filters.ExcludeSymbols...)
		for k, v := range s.Symbols.Pairs {
			names = append(names, k, v)
		}
		for _, n := range names {
			if !utf8.ValidString(n) || utf8.RuneCountInString(n) > MaxSymbolLen || strings.ContainsRune(n, 0) {
				t.Fatalf("accepted symbol name %+q", n)
			}
		}
		out, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("accepted settings do not encode: %v", err)
		}
		again, err := ParseSettings(out)
		if err != nil {
			t.Fatalf("encoded settings do not parse: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(s, again) {
			t.Fatalf("round trip changed the settings:\n%+v\n%+v", s, again)
		}
	})
}
