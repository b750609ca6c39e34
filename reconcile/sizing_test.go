package reconcile

import (
	"strings"
	"testing"

	"github.com/snapcopier/copier/broker"
	"pgregory.net/rapid"
)

func TestSize(t *testing.T) {
	master := broker.AccountInfo{Balance: 10_000, Equity: 9_000}
	follower := broker.AccountInfo{Balance: 2_500, Equity: 3_000}
	eur := fx("EURUSD")
	coarse := fx("EURUSD")
	coarse.LotStep, coarse.MinLot = 0.1, 0.1
	ger10, ger100, ger1 := index("GER40", 10), index("GER40", 100), index("GER40", 1)
	ger100fine := ger100
	ger100fine.MinLot, ger100fine.LotStep = 0.01, 0.01
	def := DefaultSettings().Sizing
	with := func(f func(*Sizing)) Sizing { s := def; f(&s); return s }

	cases := []struct {
		name     string
		sizing   Sizing
		volume   float64 // master lots
		mspec    broker.SymbolSpec
		fspec    broker.SymbolSpec
		stop     float64 // price distance to the stop-loss
		master   *broker.AccountInfo
		want     float64
		wantSkip SkipReason
	}{
		{name: "fixed lot ignores the master volume", sizing: with(func(s *Sizing) { s.Mode, s.FixedLot = SizeFixedLot, 0.37 }),
			volume: 5, mspec: eur, fspec: eur, want: 0.37},
		{name: "same volume (multiplier 1)", sizing: def, volume: 1.23, mspec: eur, fspec: eur, want: 1.23},
		// 0.25 × 0.5 = 0.125 → rounded down to the 0.01 step = 0.12
		{name: "multiplier rounds down to the step", sizing: with(func(s *Sizing) { s.Multiplier = 0.5 }),
			volume: 0.25, mspec: eur, fspec: eur, want: 0.12},
		// 1.0 × 2,500 / 10,000 = 0.25
		{name: "balance ratio", sizing: with(func(s *Sizing) { s.Mode = SizeBalanceRatio }),
			volume: 1, mspec: eur, fspec: eur, want: 0.25},
		// 0.3 × 2,500 / 10,000 × 2 = 0.15
		{name: "balance ratio with multiplier", sizing: with(func(s *Sizing) { s.Mode, s.Multiplier = SizeBalanceRatio, 2 }),
			volume: 0.3, mspec: eur, fspec: eur, want: 0.15},
		// 1.0 × 3,000 / 9,000 = 0.3333 → 0.33
		{name: "equity ratio", sizing: with(func(s *Sizing) { s.Mode = SizeEquityRatio }),
			volume: 1, mspec: eur, fspec: eur, want: 0.33},
		// risk 1 % of 3,000 = 30; 0.00500 × 100,000 = 500 per lot; 30 / 500 = 0.06
		{name: "risk percent", sizing: with(func(s *Sizing) { s.Mode, s.RiskPercent = SizeRiskPercent, 1 }),
			volume: 3, mspec: eur, fspec: eur, stop: 0.005, want: 0.06},
		// risk 2 % of 3,000 = 60; 30.0 × 1 = 30 per lot; 60 / 30 = 2.0
		{name: "risk percent on an index", sizing: with(func(s *Sizing) { s.Mode, s.RiskPercent = SizeRiskPercent, 2 }),
			volume: 1, mspec: ger1, fspec: ger1, stop: 30, want: 2},
		{name: "risk percent without stop-loss", sizing: with(func(s *Sizing) { s.Mode, s.RiskPercent = SizeRiskPercent, 1 }),
			volume: 1, mspec: eur, fspec: eur, wantSkip: SkipNoStopLoss},
		{name: "balance ratio without master balance", sizing: with(func(s *Sizing) { s.Mode = SizeBalanceRatio }),
			volume: 1, mspec: eur, fspec: eur, master: &broker.AccountInfo{}, wantSkip: SkipNoBalance},
		// 20 × 10 = 200 → capped at the symbol's 100
		{name: "oversize is capped at the symbol maximum", sizing: with(func(s *Sizing) { s.Multiplier = 10 }),
			volume: 20, mspec: eur, fspec: eur, want: 100},
		{name: "oversize is capped at max_lot", sizing: with(func(s *Sizing) { s.MaxLot = 2 }),
			volume: 5, mspec: eur, fspec: eur, want: 2},
		// 1.0 × 0.001 = 0.001 < 0.01
		{name: "below the minimum is skipped", sizing: with(func(s *Sizing) { s.Multiplier = 0.001 }),
			volume: 1, mspec: eur, fspec: eur, wantSkip: SkipVolumeBelowMin},
		{name: "force minimum", sizing: with(func(s *Sizing) { s.Multiplier, s.ForceMin = 0.001, true }),
			volume: 1, mspec: eur, fspec: eur, want: 0.01},
		// 0.02 < min_lot 0.05 → forced to 0.05
		{name: "force min_lot", sizing: with(func(s *Sizing) { s.MinLot, s.ForceMin = 0.05, true }),
			volume: 0.02, mspec: eur, fspec: eur, want: 0.05},
		{name: "below min_lot is skipped", sizing: with(func(s *Sizing) { s.MinLot = 0.05 }),
			volume: 0.02, mspec: eur, fspec: eur, wantSkip: SkipVolumeBelowMin},
		// 0.29 on a 0.1 step → 0.2
		{name: "coarse lot step", sizing: def, volume: 0.29, mspec: eur, fspec: coarse, want: 0.2},
		// master 1 lot × 10 units = 10 units = 0.1 follower lots of 100 units
		{name: "contract size 10 → 100", sizing: def, volume: 1, mspec: ger10, fspec: ger100, want: 0.1},
		// master 0.5 lot × 100 units = 50 units = 5 follower lots of 10 units
		{name: "contract size 100 → 10", sizing: def, volume: 0.5, mspec: ger100, fspec: ger10, want: 5},
		// 2.5 × 10 / 100 = 0.25 → 0.25 on a 0.01 step
		{name: "contract alignment then step", sizing: def, volume: 2.5, mspec: ger10, fspec: ger100fine, want: 0.25},
		// 1.0 × 2,500 / 10,000 × 10 / 100 = 0.025 → 0.02
		{name: "balance ratio with contract alignment", sizing: with(func(s *Sizing) { s.Mode = SizeBalanceRatio }),
			volume: 1, mspec: ger10, fspec: ger100fine, want: 0.02},
		{name: "alignment off", sizing: with(func(s *Sizing) { s.AlignContractSize = false }),
			volume: 1, mspec: ger10, fspec: ger100, want: 1},
		{name: "alignment with unknown master contract", sizing: def, volume: 1,
			mspec: broker.SymbolSpec{Name: "GER40"}, fspec: ger100, wantSkip: SkipContractSize},
		{name: "fixed lot is not aligned", sizing: with(func(s *Sizing) { s.Mode, s.FixedLot = SizeFixedLot, 0.5 }),
			volume: 1, mspec: ger10, fspec: ger100, want: 0.5},
		{name: "unusable follower spec", sizing: def, volume: 1, mspec: eur,
			fspec: broker.SymbolSpec{Name: "EURUSD", ContractSize: 100_000}, wantSkip: SkipSymbolSpec},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := master
			if tc.master != nil {
				m = *tc.master
			}
			got, why := Size(SizeInput{Sizing: tc.sizing, MasterVolume: tc.volume, Master: m, Follower: follower,
				MasterSpec: tc.mspec, FollowerSpec: tc.fspec, StopDistance: tc.stop})
			if got != tc.want || why != tc.wantSkip {
				t.Fatalf("Size = %v, %v; want %v, %v", got, why, tc.want, tc.wantSkip)
			}
		})
	}
}

func TestFitVolume(t *testing.T) {
	eur := fx("EURUSD")
	odd := fx("X")
	odd.MinLot, odd.LotStep, odd.MaxLot = 0.1, 0.05, 2.02
	cases := []struct {
		name     string
		v        float64
		spec     broker.SymbolSpec
		sizing   Sizing
		want     float64
		wantSkip SkipReason
	}{
		{"on step", 0.3, eur, Sizing{}, 0.3, 0},
		{"float noise is not rounded away", 0.1 + 0.2, eur, Sizing{}, 0.3, 0},
		{"rounds down, never up", 0.019999, eur, Sizing{}, 0.01, 0},
		{"cap before step", 250, eur, Sizing{}, 100, 0},
		// max 2.02 is not on the 0.05 step: the largest volume allowed is 2.0
		{"max rounded down to the step", 3, odd, Sizing{}, 2, 0},
		// 0.17 → 0.15 on a 0.05 step
		{"step 0.05", 0.17, odd, Sizing{}, 0.15, 0},
		{"below min", 0.09, odd, Sizing{}, 0, SkipVolumeBelowMin},
		{"force min", 0.09, odd, Sizing{ForceMin: true}, 0.1, 0},
		// min_lot 0.12 → rounded up to the step: 0.15
		{"min_lot rounded up to the step", 0.12, odd, Sizing{MinLot: 0.12, ForceMin: true}, 0.15, 0},
		{"zero", 0, eur, Sizing{ForceMin: true}, 0, SkipVolumeBelowMin},
		{"min above max", 1, eur, Sizing{MinLot: 3, MaxLot: 2}, 0, SkipLotBounds},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, why := FitVolume(tc.v, tc.spec, tc.sizing)
			if got != tc.want || why != tc.wantSkip {
				t.Fatalf("FitVolume(%v) = %v, %v; want %v, %v", tc.v, got, why, tc.want, tc.wantSkip)
			}
		})
	}
}

// TestFitVolumeBounds: whatever the computed volume, a fitted volume is within the
// effective [min, max] and on the lot step.
func TestFitVolumeBounds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		step := rapid.SampledFrom([]float64{0.01, 0.1, 0.05, 1, 0.001, 0.25}).Draw(t, "step")
		minLot := step * float64(rapid.IntRange(1, 20).Draw(t, "minSteps"))
		maxLot := minLot + step*float64(rapid.IntRange(0, 5000).Draw(t, "maxSteps"))
		spec := broker.SymbolSpec{Name: "S", MinLot: minLot, MaxLot: maxLot, LotStep: step}
		s := Sizing{
			ForceMin: rapid.Bool().Draw(t, "forceMin"),
			MinLot:   rapid.SampledFrom([]float64{0, 0, minLot * 1.5, 0.3}).Draw(t, "minLot"),
			MaxLot:   rapid.SampledFrom([]float64{0, 0, maxLot / 2, 7.77}).Draw(t, "maxLot"),
		}
		v := rapid.Float64Range(0, 2*maxLot+1).Draw(t, "v")
		got, why := FitVolume(v, spec, s)
		if why != 0 {
			if got != 0 {
				t.Fatalf("skipped with volume %v", got)
			}
			return
		}
		lo, hi := minLot, maxLot
		if s.MinLot > lo {
			lo = s.MinLot
		}
		if s.MaxLot > 0 && s.MaxLot < hi {
			hi = s.MaxLot
		}
		if got < lo-1e-9 || got > hi+1e-9 {
			t.Fatalf("FitVolume(%v) = %v outside [%v, %v]", v, got, lo, hi)
		}
		if !OnStep(got, step) {
			t.Fatalf("FitVolume(%v) = %v not on step %v", v, got, step)
		}
		if !s.ForceMin && got > v+1e-9 {
			t.Fatalf("FitVolume(%v) = %v rounded up without force_min", v, got)
		}
	})
}

// An unknown balance and equity (broker.AccountInfo.EquityUnknown, a venue that does not
// say them) is never read as 0: a mode that needs the master's or the follower's skips
// the copy as equity_unknown, naming whose; the modes that need neither size as usual.
func TestSizeEquityUnknown(t *testing.T) {
	eur := fx("EURUSD")
	known := broker.AccountInfo{Balance: 10_000, Equity: 9_000, Mode: broker.Netting}
	unknown := broker.AccountInfo{Mode: broker.Netting, EquityUnknown: true}
	def := DefaultSettings().Sizing
	with := func(f func(*Sizing)) Sizing { s := def; f(&s); return s }
	needs := map[string]Sizing{
		"balance_ratio": with(func(s *Sizing) { s.Mode = SizeBalanceRatio }),
		"equity_ratio":  with(func(s *Sizing) { s.Mode = SizeEquityRatio }),
		"risk_percent":  with(func(s *Sizing) { s.Mode, s.RiskPercent = SizeRiskPercent, 1 }),
	}
	for mode, sz := range needs {
		for _, c := range []struct {
			who              string
			master, follower broker.AccountInfo
		}{{"follower's", known, unknown}, {"master's", unknown, known}, {"master's and the follower's", unknown, unknown}} {
			if mode == "risk_percent" && !c.follower.EquityUnknown {
				continue // risk_percent reads only the follower's equity
			}
			v, why, detail := size(SizeInput{Sizing: sz, MasterVolume: 1, Master: c.master, Follower: c.follower,
				MasterSpec: eur, FollowerSpec: eur, StopDistance: 0.005})
			if v != 0 || why != SkipEquityUnknown || !strings.Contains(detail, "equity unknown") || !strings.Contains(detail, mode) {
				t.Errorf("%s, %s unknown: %v %v %q, want a skip %v naming %s and \"equity unknown\"", mode, c.who, v, why, detail, SkipEquityUnknown, mode)
			}
			if mode != "risk_percent" && !strings.Contains(detail, c.who) {
				t.Errorf("%s: detail %q does not name the %s", mode, detail, c.who)
			}
		}
	}
	if why := SkipEquityUnknown.String(); why != "equity_unknown" {
		t.Errorf("reason name %q", why)
	}
	for _, sz := range []Sizing{def, with(func(s *Sizing) { s.Mode, s.FixedLot = SizeFixedLot, 0.3 })} {
		if v, why := Size(SizeInput{Sizing: sz, MasterVolume: 0.2, Master: unknown, Follower: unknown, MasterSpec: eur, FollowerSpec: eur}); why != 0 || v <= 0 {
			t.Errorf("mode %v with unknown equities: %v %v, want a volume", sz.Mode, v, why)
		}
	}
}
