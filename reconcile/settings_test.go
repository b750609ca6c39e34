package reconcile

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/snapcopier/copier/reconcile/protect"
)

func TestDefaultSettingsValid(t *testing.T) {
	if err := DefaultSettings().Validate(); err != nil {
		t.Fatal(err)
	}
	s, err := ParseSettings([]byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s, DefaultSettings()) {
		t.Fatalf("ParseSettings({}) = %+v, want the defaults", s)
	}
}

// fullSettings sets every field away from its default.
func fullSettings() Settings {
	return Settings{
		Sizing: Sizing{Mode: SizeBalanceRatio, FixedLot: 0.1, Multiplier: 1.5, RiskPercent: 2, AlignContractSize: false,
			MinLot: 0.02, MaxLot: 5, ForceMin: true},
		Symbols: SymbolMap{Pairs: map[string]string{"GER40": "DE40.cash"}, MasterPrefix: "x", MasterSuffix: ".pro",
			FollowerPrefix: "y", FollowerSuffix: ".m"},
		Reverse: true,
		Filters: Filters{IncludeSymbols: []string{"EURUSD"}, ExcludeSymbols: []string{"GBPUSD"}, Sides: SellOnly,
			Magics: []MagicRange{{1010, 1019}, {42, 42}}, ExcludeMagics: []MagicRange{{1015, 1015}}},
		Stops:   Stops{Mode: StopsFixed, SLPoints: 200, TPPoints: 400},
		Limits:  Limits{MaxOpenCopies: 10, MaxLotsPerSymbol: 3},
		Window:  Window{MaxAgeSeconds: 0, MaxDeviationPoints: 30},
		Protect: protect.Limits{CloseOnly: protect.LetClose},
	}
}

func TestSettingsJSONRoundTrip(t *testing.T) {
	for name, s := range map[string]Settings{"defaults": DefaultSettings(), "full": fullSettings()} {
		t.Run(name, func(t *testing.T) {
			b, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseSettings(b)
			if err != nil {
				t.Fatalf("ParseSettings(%s): %v", b, err)
			}
			if !reflect.DeepEqual(got, s) {
				t.Fatalf("round trip of %s:\n got %+v\nwant %+v", b, got, s)
			}
		})
	}
}

func TestSettingsJSONShape(t *testing.T) {
	b, err := json.Marshal(fullSettings())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"mode":"balance_ratio"`, `"magics":["1010-1019","42"]`, `"sides":"sell"`,
		`"mode":"fixed"`, `"max_age_seconds":0`, `"pairs":{"GER40":"DE40.cash"}`, `"align_contract_size":false`,
		`"protect":{"close_only":"let_close"}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
	d, _ := json.Marshal(DefaultSettings())
	const wantDefault = `{"sizing":{"mode":"lot_multiplier","multiplier":1,"align_contract_size":true},"stops":{"mode":"copy"},"window":{"max_age_seconds":60}}`
	if string(d) != wantDefault {
		t.Errorf("defaults marshal as\n%s\nwant\n%s", d, wantDefault)
	}
}

func TestParseSettingsPartial(t *testing.T) {
	s, err := ParseSettings([]byte(`{"sizing":{"mode":"fixed_lot","fixed_lot":0.5},"filters":{"magics":["1010-1019", 7]},"reverse":true}`))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultSettings()
	want.Sizing.Mode, want.Sizing.FixedLot = SizeFixedLot, 0.5
	want.Filters.Magics = []MagicRange{{1010, 1019}, {7, 7}}
	want.Reverse = true
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("got %+v\nwant %+v", s, want)
	}
}

func TestParseSettingsErrors(t *testing.T) {
	cases := []struct {
		json  string
		field string // the FieldError's field, or a fragment of the message
	}{
		{`{"sizing":{"mode":"fixed_lot"}}`, "sizing.fixed_lot"},
		{`{"sizing":{"mode":"lot_multiplier","multiplier":0}}`, "sizing.multiplier"},
		{`{"sizing":{"mode":"equity_ratio","multiplier":-2}}`, "sizing.multiplier"},
		{`{"sizing":{"mode":"risk_percent"}}`, "sizing.risk_percent"},
		{`{"sizing":{"mode":"risk_percent","risk_percent":150}}`, "sizing.risk_percent"},
		{`{"sizing":{"min_lot":-1}}`, "sizing.min_lot"},
		{`{"sizing":{"max_lot":-1}}`, "sizing.max_lot"},
		{`{"sizing":{"min_lot":2,"max_lot":1}}`, "sizing.min_lot"},
		{`{"symbols":{"pairs":{"GER40":""}}}`, "symbols.pairs[GER40]"},
		{`{"symbols":{"follower_suffix":" .m"}}`, "symbols.follower_suffix"},
		{`{"filters":{"include_symbols":[""]}}`, "filters.include_symbols[0]"},
		{`{"stops":{"mode":"fixed"}}`, "stops.sl_points"},
		{`{"stops":{"sl_points":-5}}`, "stops.sl_points"},
		{`{"limits":{"max_open_copies":-1}}`, "limits.max_open_copies"},
		{`{"limits":{"max_lots_per_symbol":-1}}`, "limits.max_lots_per_symbol"},
		{`{"window":{"max_age_seconds":-1}}`, "window.max_age_seconds"},
		{`{"window":{"max_deviation_points":-1}}`, "window.max_deviation_points"},
		{`{"protect":{"max_drawdown":{"percent":120}}}`, "protect.max_drawdown.percent"},
		{`{"protect":{"max_drawdown":{"percent":-5}}}`, "protect.max_drawdown.percent"},
		{`{"protect":{"max_drawdown":{"percent":5,"amount":10}}}`, "protect.max_drawdown"},
		{`{"protect":{"daily_loss":{"amount":-50}}}`, "protect.daily_loss.amount"},
		{`{"protect":{"daily_loss":{"amount":50,"time_zone":"Mars/Olympus"}}}`, "protect.daily_loss.time_zone"},
		{`{"protect":{"daily_loss":{"amount":50,"reset_at":"25:00"}}}`, "protect.daily_loss.reset_at"},
		{`{"protect":{"close_only":"later"}}`, "protect.close_only"},
		{`{"protect":{"max_drawdown":{"pct":5}}}`, "protect.max_drawdown.pct"},
		// decoding errors
		{`{"sizing":{"mode":"martingale"}}`, "unknown sizing mode"},
		{`{"stops":{"mode":"trailing"}}`, "unknown stops mode"},
		{`{"filters":{"sides":"long"}}`, "unknown side filter"},
		{`{"filters":{"magics":["1019-1010"]}}`, "from exceeds to"},
		{`{"filters":{"magics":["ten"]}}`, "want a number"},
		{`{"sizing":{"mode":"fixed_lot","fixed_lot":1,"lots":2}}`, "sizing.lots"},
		{`{"revers":true}`, "revers"},
		// names are exact, once each (encoding/json alone takes these)
		{`{"Sizing":{"mode":"fixed_lot","fixed_lot":1}}`, "Sizing"},
		{`{"sizing":{"MODE":"fixed_lot","fixed_lot":1}}`, "sizing.MODE"},
		{`{"reverse":true,"reverse":false}`, "reverse"},
		{`{"symbols":{"pairs":{"a":"b"},"Pairs":{}}}`, "symbols.Pairs"},
		{`{} ]`, "trailing data"},
		// sanity bounds
		{`{"sizing":{"mode":"fixed_lot","fixed_lot":1e300}}`, "sizing.fixed_lot"},
		{`{"sizing":{"multiplier":1e308}}`, "sizing.multiplier"},
		{`{"sizing":{"max_lot":1001}}`, "sizing.max_lot"},
		{`{"sizing":{"min_lot":5000}}`, "sizing.min_lot"},
		{`{"filters":{"include_symbols":["` + strings.Repeat("E", 10000) + `"]}}`, "filters.include_symbols[0]"},
		{`{"filters":{"exclude_symbols":["EUR\u200bUSD"]}}`, "filters.exclude_symbols[0]"},
		{`{"filters":{"exclude_symbols":["EUR\u0000USD"]}}`, "filters.exclude_symbols[0]"},
		{`{"symbols":{"pairs":{"GER40":"DE40\ufeff"}}}`, "symbols.pairs[GER40]"},
		{`{"symbols":{"pairs":{"GER\u0007":"DE40"}}}`, "symbols.pairs"},
		{`{"symbols":{"follower_suffix":".` + strings.Repeat("m", 20) + `"}}`, "symbols.follower_suffix"},
		{`{"symbols":{"master_prefix":"\u202e"}}`, "symbols.master_prefix"},
		{`{} {}`, "trailing data"},
		{`[]`, "cannot unmarshal"},
		{``, "EOF"},
	}
	for _, tc := range cases {
		_, err := ParseSettings([]byte(tc.json))
		if err == nil {
			t.Errorf("ParseSettings(%s) accepted", tc.json)
			continue
		}
		if !errors.Is(err, ErrInvalidSettings) {
			t.Errorf("ParseSettings(%s) = %v, not ErrInvalidSettings", tc.json, err)
		}
		var fe *FieldError
		if errors.As(err, &fe) {
			if fe.Field != tc.field {
				t.Errorf("ParseSettings(%s): field %q, want %q (%v)", tc.json, fe.Field, tc.field, err)
			}
		} else if !strings.Contains(err.Error(), tc.field) {
			t.Errorf("ParseSettings(%s) = %q, want it to mention %q", tc.json, err, tc.field)
		}
	}
}

func TestValidateReportsEveryField(t *testing.T) {
	err := Settings{}.Validate()
	for _, field := range []string{"sizing.mode", "stops.mode"} {
		if err == nil || !strings.Contains(err.Error(), field+":") {
			t.Errorf("Settings{}.Validate() = %v, want a %s error", err, field)
		}
	}
	if _, err := json.Marshal(Settings{}); err == nil {
		t.Errorf("marshalling the zero Settings (no modes) succeeded")
	}
}

func TestMagicRange(t *testing.T) {
	cases := map[string]MagicRange{"42": {42, 42}, "1010-1019": {1010, 1019}, " 5 - 7 ": {5, 7}, "0": {0, 0}}
	for in, want := range cases {
		got, err := ParseMagicRange(in)
		if err != nil || got != want {
			t.Errorf("ParseMagicRange(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "-", "a-b", "5-", "-5", "7-5", "1-2-3"} {
		if r, err := ParseMagicRange(bad); err == nil {
			t.Errorf("ParseMagicRange(%q) = %v, want an error", bad, r)
		}
	}
	r := MagicRange{1010, 1019}
	if !r.Contains(1010) || !r.Contains(1019) || r.Contains(1009) || r.Contains(1020) {
		t.Errorf("%v.Contains is wrong at the edges", r)
	}
}

func TestSizingModeNames(t *testing.T) {
	for m := SizeFixedLot; m <= SizeRiskPercent; m++ {
		got, err := ParseSizingMode(m.String())
		if err != nil || got != m {
			t.Errorf("ParseSizingMode(%q) = %v, %v", m, got, err)
		}
	}
}
