package reconcile

import (
	"sort"
	"strings"
	"unicode"

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
	froms := make([]string, 0, len(m.Pairs))
	for from := range m.Pairs {
		froms = append(froms, from)
	}
	sort.Strings(froms)
	for _, from := range froms {
		if !validSymbolName(from) {
			fe.add("symbols.pairs", "master symbol %q must be non-empty and without spaces", from)
		}
		if to := m.Pairs[from]; !validSymbolName(to) {
			fe.add("symbols.pairs["+from+"]", "follower symbol %q must be non-empty and without spaces", to)
		}
	}
	for _, f := range []struct{ name, v string }{
		{"symbols.master_prefix", m.MasterPrefix},
		{"symbols.master_suffix", m.MasterSuffix},
		{"symbols.follower_prefix", m.FollowerPrefix},
		{"symbols.follower_suffix", m.FollowerSuffix},
	} {
		if strings.IndexFunc(f.v, unicode.IsSpace) >= 0 {
			fe.add(f.name, "must not contain spaces (got %q)", f.v)
		}
	}
}

// validSymbolName reports whether s could name a symbol: non-empty, no white space.
func validSymbolName(s string) bool {
	return s != "" && strings.IndexFunc(s, unicode.IsSpace) < 0
}
