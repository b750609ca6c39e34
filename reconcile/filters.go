package reconcile

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/snapcopier/copier/broker"
)

// SideFilter selects the master sides that are copied. It marshals as "both" (the zero
// value), "buy" or "sell".
type SideFilter int8

const (
	// BothSides copies buys and sells.
	BothSides SideFilter = iota
	// BuyOnly copies master buys only.
	BuyOnly
	// SellOnly copies master sells only.
	SellOnly
)

// String returns "both", "buy" or "sell".
func (f SideFilter) String() string {
	switch f {
	case BothSides:
		return "both"
	case BuyOnly:
		return "buy"
	case SellOnly:
		return "sell"
	}
	return fmt.Sprintf("SideFilter(%d)", int8(f))
}

// Valid reports whether f is one of the defined values.
func (f SideFilter) Valid() bool { return f >= BothSides && f <= SellOnly }

// Allows reports whether a master position on side s passes the filter.
func (f SideFilter) Allows(s broker.Side) bool {
	switch f {
	case BuyOnly:
		return s == broker.Buy
	case SellOnly:
		return s == broker.Sell
	}
	return true
}

// MarshalText writes the filter's name.
func (f SideFilter) MarshalText() ([]byte, error) {
	if !f.Valid() {
		return nil, fmt.Errorf("invalid side filter %d", int8(f))
	}
	return []byte(f.String()), nil
}

// UnmarshalText parses "both", "buy" or "sell".
func (f *SideFilter) UnmarshalText(b []byte) error {
	for v := BothSides; v <= SellOnly; v++ {
		if v.String() == string(b) {
			*f = v
			return nil
		}
	}
	return fmt.Errorf("unknown side filter %q (want both, buy or sell)", b)
}

// Filters select the master positions a link copies. Empty lists select everything. They
// decide only whether a missing copy is opened: copies already open are managed (closed,
// reduced, SL/TP fixed) whatever the filters say now.
type Filters struct {
	// IncludeSymbols, when not empty, copies only these master symbols. Names match the
	// master's full name or its base name (SymbolMap.Base), case-insensitively.
	IncludeSymbols []string `json:"include_symbols,omitempty"`
	// ExcludeSymbols never copies these master symbols (matched like IncludeSymbols).
	ExcludeSymbols []string `json:"exclude_symbols,omitempty"`
	// Sides copies buys, sells or both (default).
	Sides SideFilter `json:"sides,omitempty"`
	// Magics, when not empty, copies only master positions whose magic number is in one of
	// the ranges ("0" selects the master's manual trades).
	Magics []MagicRange `json:"magics,omitempty"`
	// ExcludeMagics never copies master positions whose magic is in one of the ranges.
	ExcludeMagics []MagicRange `json:"exclude_magics,omitempty"`
}

// check returns the reason a master position does not pass the filters, or 0. base is the
// position's base symbol name.
func (f Filters) check(p broker.Position, base string) SkipReason {
	if len(f.IncludeSymbols) > 0 && !symbolListed(f.IncludeSymbols, p.Symbol, base) {
		return SkipFilteredSymbol
	}
	if symbolListed(f.ExcludeSymbols, p.Symbol, base) {
		return SkipFilteredSymbol
	}
	if !f.Sides.Allows(p.Side) {
		return SkipFilteredSide
	}
	if len(f.Magics) > 0 && !anyContains(f.Magics, p.Magic) {
		return SkipFilteredMagic
	}
	if anyContains(f.ExcludeMagics, p.Magic) {
		return SkipFilteredMagic
	}
	return 0
}

// symbolListed reports whether list names symbol or base, case-insensitively.
func symbolListed(list []string, symbol, base string) bool {
	for _, s := range list {
		if strings.EqualFold(s, symbol) || strings.EqualFold(s, base) {
			return true
		}
	}
	return false
}

func (f Filters) validate(fe *fieldErrors) {
	for _, l := range []struct {
		name string
		n    int
	}{{"filters.include_symbols", len(f.IncludeSymbols)}, {"filters.exclude_symbols", len(f.ExcludeSymbols)},
		{"filters.magics", len(f.Magics)}, {"filters.exclude_magics", len(f.ExcludeMagics)}} {
		if l.n > MaxListItems {
			fe.add(l.name, "at most %d items (got %d)", MaxListItems, l.n)
			return
		}
	}
	for i, s := range f.IncludeSymbols {
		if !validSymbolName(s) {
			fe.add("filters.include_symbols["+strconv.Itoa(i)+"]", "symbol %+q: %s", s, symbolRule)
		}
	}
	for i, s := range f.ExcludeSymbols {
		if !validSymbolName(s) {
			fe.add("filters.exclude_symbols["+strconv.Itoa(i)+"]", "symbol %+q: %s", s, symbolRule)
		}
	}
	if !f.Sides.Valid() {
		fe.add("filters.sides", "must be both, buy or sell")
	}
	for i, r := range f.Magics {
		if err := r.check(); err != nil {
			fe.add("filters.magics["+strconv.Itoa(i)+"]", "%v", err)
		}
	}
	for i, r := range f.ExcludeMagics {
		if err := r.check(); err != nil {
			fe.add("filters.exclude_magics["+strconv.Itoa(i)+"]", "%v", err)
		}
	}
}
