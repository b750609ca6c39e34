package reconcile

import (
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/snapcopier/copier/broker"
)

// SymbolMap maps master symbol names to follower symbol names.
//
// A master symbol resolves, in this order, to
//
//  1. the explicit pair for its full name, or for its base name (the name without
//     MasterPrefix and MasterSuffix), when Pairs has one; the pair is final: if the follower
//     has no such symbol the position is skipped;
//  2. FollowerPrefix + base + FollowerSuffix, when any prefix or suffix rule is set;
//  3. the same name;
//  4. the base name;
//
// taking the first candidate the follower has. With MasterSuffix ".pro" and FollowerSuffix
// ".m", "EURUSD.pro" resolves to "EURUSD.m"; with only FollowerSuffix ".m", "EURUSD"
// resolves to "EURUSD.m". A symbol the follower does not have is skipped with
// SkipSymbolNotFound.
type SymbolMap struct {
	// Pairs maps a master symbol (full or base name) to a follower symbol.
	Pairs map[string]string `json:"pairs,omitempty"`
	// MasterPrefix is stripped from master names to get the base name ("m.").
	MasterPrefix string `json:"master_prefix,omitempty"`
	// MasterSuffix is stripped from master names to get the base name (".pro").
	MasterSuffix string `json:"master_suffix,omitempty"`
	// FollowerPrefix is put before the base name for the follower.
	FollowerPrefix string `json:"follower_prefix,omitempty"`
	// FollowerSuffix is put after the base name for the follower (".m").
	FollowerSuffix string `json:"follower_suffix,omitempty"`
}

// Base returns master without MasterPrefix and MasterSuffix (each stripped only when present
// and leaving a non-empty name).
func (m SymbolMap) Base(master string) string {
	base := master
	if m.MasterPrefix != "" && strings.HasPrefix(base, m.MasterPrefix) && len(base) > len(m.MasterPrefix) {
		base = base[len(m.MasterPrefix):]
	}
	if m.MasterSuffix != "" && strings.HasSuffix(base, m.MasterSuffix) && len(base) > len(m.MasterSuffix) {
		base = base[:len(base)-len(m.MasterSuffix)]
	}
	return base
}

// Resolve returns the follower symbol for the master symbol, and false when the follower
// has none of the candidates (see SymbolMap). has reports whether the follower has a symbol.
func (m SymbolMap) Resolve(master string, has func(string) bool) (string, bool) {
	base := m.Base(master)
	if to, ok := m.Pairs[master]; ok {
		return to, has(to)
	}
	if to, ok := m.Pairs[base]; ok {
		return to, has(to)
	}
	if m.MasterPrefix != "" || m.MasterSuffix != "" || m.FollowerPrefix != "" || m.FollowerSuffix != "" {
		if to := m.FollowerPrefix + base + m.FollowerSuffix; has(to) {
			return to, true
		}
	}
	if has(master) {
		return master, true
	}
	if has(base) {
		return base, true
	}
	return "", false
}

// ResolveIn is Resolve against a map of follower symbol specs.
func (m SymbolMap) ResolveIn(master string, follower map[string]broker.SymbolSpec) (string, bool) {
	return m.Resolve(master, func(name string) bool { _, ok := follower[name]; return ok })
}

func (m SymbolMap) validate(fe *fieldErrors) {
	if len(m.Pairs) > MaxListItems {
		fe.add("symbols.pairs", "at most %d pairs (got %d)", MaxListItems, len(m.Pairs))
		return
	}
	froms := make([]string, 0, len(m.Pairs))
	for from := range m.Pairs {
		froms = append(froms, from)
	}
	sort.Strings(froms)
	for _, from := range froms {
		if !validSymbolName(from) {
			fe.add("symbols.pairs", "master symbol %+q: %s", from, symbolRule)
			continue
		}
		if to := m.Pairs[from]; !validSymbolName(to) {
			fe.add("symbols.pairs["+from+"]", "follower symbol %+q: %s", to, symbolRule)
		}
	}
	for _, f := range []struct{ name, v string }{
		{"symbols.master_prefix", m.MasterPrefix},
		{"symbols.master_suffix", m.MasterSuffix},
		{"symbols.follower_prefix", m.FollowerPrefix},
		{"symbols.follower_suffix", m.FollowerSuffix},
	} {
		if f.v != "" && !validSymbolText(f.v, MaxAffixLen) {
			fe.add(f.name, "%+q: at most %d visible characters, no spaces", f.v, MaxAffixLen)
		}
	}
}

// Bounds of the names in settings: MetaTrader symbol names are at most 31 characters.
const (
	// MaxSymbolLen is the longest symbol name, in characters.
	MaxSymbolLen = 32
	// MaxAffixLen is the longest symbol prefix or suffix, in characters.
	MaxAffixLen = 16
	// MaxListItems bounds every list and map of settings (symbols, pairs, magic ranges).
	MaxListItems = 1000
)

// symbolRule says what validSymbolName accepts.
var symbolRule = "must be 1 to " + strconv.Itoa(MaxSymbolLen) + " visible characters without spaces"

// validSymbolName reports whether s could name a symbol: 1 to MaxSymbolLen visible
// characters, no white space.
func validSymbolName(s string) bool {
	return s != "" && validSymbolText(s, MaxSymbolLen)
}

// validSymbolText reports whether s is valid UTF-8 of at most maxLen characters, each a
// visible one: no white space, control or format character (zero-width space, bidi
// marks, byte-order mark) and no U+FFFD (what invalid UTF-8 decodes to).
func validSymbolText(s string, maxLen int) bool {
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > maxLen {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || !unicode.IsGraphic(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError
	}) < 0
}
