package reconcile

import "testing"

func TestSymbolMapResolve(t *testing.T) {
	follower := specs(fx("EURUSD.m"), fx("GBPUSD"), fx("XAUUSD"), fx("DE40.cash"), fx("USDJPY"), fx("m.AUDUSD"))
	cases := []struct {
		name   string
		m      SymbolMap
		master string
		want   string
		ok     bool
	}{
		{"same name", SymbolMap{}, "GBPUSD", "GBPUSD", true},
		{"follower suffix", SymbolMap{FollowerSuffix: ".m"}, "EURUSD", "EURUSD.m", true},
		{"strip master suffix, add follower suffix", SymbolMap{MasterSuffix: ".pro", FollowerSuffix: ".m"}, "EURUSD.pro", "EURUSD.m", true},
		{"strip master suffix only", SymbolMap{MasterSuffix: "#"}, "USDJPY#", "USDJPY", true},
		{"strip master prefix, add follower prefix", SymbolMap{MasterPrefix: "x.", FollowerPrefix: "m."}, "x.AUDUSD", "m.AUDUSD", true},
		{"rule target missing: same name", SymbolMap{FollowerSuffix: ".m"}, "XAUUSD", "XAUUSD", true},
		{"rule target missing: base name", SymbolMap{MasterSuffix: ".pro", FollowerSuffix: ".ecn"}, "GBPUSD.pro", "GBPUSD", true},
		{"explicit pair", SymbolMap{Pairs: map[string]string{"GER40": "DE40.cash"}}, "GER40", "DE40.cash", true},
		{"pair on the base name", SymbolMap{MasterSuffix: ".pro", Pairs: map[string]string{"GER40": "DE40.cash"}}, "GER40.pro", "DE40.cash", true},
		{"pair wins over rules", SymbolMap{FollowerSuffix: ".m", Pairs: map[string]string{"EURUSD": "GBPUSD"}}, "EURUSD", "GBPUSD", true},
		{"pair to a missing symbol is final", SymbolMap{Pairs: map[string]string{"GBPUSD": "GBPUSD.x"}}, "GBPUSD", "GBPUSD.x", false},
		{"not found", SymbolMap{}, "BTCUSD", "", false},
		{"suffix is not stripped from a name that does not end with it", SymbolMap{MasterSuffix: ".pro"}, "GBPUSD", "GBPUSD", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.m.ResolveIn(tc.master, follower)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("Resolve(%q) = %q, %v; want %q, %v", tc.master, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestSymbolMapBase(t *testing.T) {
	m := SymbolMap{MasterPrefix: "m.", MasterSuffix: ".pro"}
	for in, want := range map[string]string{"m.EURUSD.pro": "EURUSD", "EURUSD.pro": "EURUSD", "EURUSD": "EURUSD", ".pro": ".pro", "m.": "m."} {
		if got := m.Base(in); got != want {
			t.Errorf("Base(%q) = %q, want %q", in, got, want)
		}
	}
}
