package fix

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/snapcopier/copier/broker"
)

// CheckSymbols refuses a configured symbol list that cannot be traded as it is: a missing
// or repeated name or venue id, a name or venue id with a space, '=' or a control character
// (the venue id goes into Symbol (55) as it is; a name is one word in the console's list),
// a contract size, lot minimum or step that is not positive, a maximum below the minimum,
// digits outside 0..10. The node's list (Config.Symbols, ParseSymbols) and an account's
// (Credentials.FIX.Symbols; the console and the API check it when it is entered, Connect
// again) are checked by it alike. The error names the symbol by its place (from 1) and name.
func CheckSymbols(list []Symbol) error {
	names, ids := map[string]bool{}, map[string]bool{}
	for i, sy := range list {
		id := venueID(sy)
		bad := func(why string) error { return fmt.Errorf("fix: configured symbol %d (%q): %s", i+1, sy.Name, why) }
		switch {
		case sy.Name == "":
			return bad("no name")
		case checkID("", sy.Name) != nil:
			return bad("the name has a space, '=' or a control character")
		case names[sy.Name]:
			return bad("the name is listed twice")
		case ids[id]:
			return bad(fmt.Sprintf("the venue id %q is listed twice", id))
		case checkID("", id) != nil:
			return bad("the venue id has a space, '=' or a control character")
		case !(sy.ContractSize > 0) || math.IsInf(sy.ContractSize, 0):
			return bad("the contract size must be positive")
		case !(sy.MinLot > 0) || !(sy.LotStep > 0) || math.IsInf(sy.MinLot, 0) || math.IsInf(sy.LotStep, 0):
			return bad("the lot minimum and step must be positive")
		case sy.MaxLot != 0 && !(sy.MaxLot >= sy.MinLot):
			return bad("the lot maximum is below the minimum")
		case sy.Digits < 0 || sy.Digits > maxDigits:
			return bad(fmt.Sprintf("digits must be 0..%d", maxDigits))
		}
		names[sy.Name], ids[id] = true, true
	}
	return nil
}

// sessionSymbols is the list a session of a dialect without SecurityList trades by: the
// account's own when it has one, else the node's. The account's is checked here too
// (it may have been written around the console), before anything is sent.
func sessionSymbols(c broker.Credentials, cfg Config) ([]Symbol, error) {
	if len(c.FIX.Symbols) == 0 {
		return cfg.Symbols, nil
	}
	if err := CheckSymbols(c.FIX.Symbols); err != nil {
		return nil, broker.NewError(broker.ErrPermanent, broker.CodeInvalidRequest, "fix: account FIX setting symbols: %s",
			strings.TrimPrefix(err.Error(), "fix: "))
	}
	return c.FIX.Symbols, nil
}

// venueID is the symbol's Symbol (55) on the wire.
func venueID(sy Symbol) string {
	if sy.ID != "" {
		return sy.ID
	}
	return sy.Name
}

// configuredTable is the symbol table of the configured list (no SecurityList).
func configuredTable(list []Symbol) *symbolTable {
	t := &symbolTable{byName: map[string]string{}, byID: map[string]broker.SymbolSpec{}}
	for _, sy := range list {
		sp := sy.SymbolSpec
		sp.Point = math.Pow10(-sp.Digits)
		sp.TradeAllowed = true
		t.list = append(t.list, sp)
		t.byName[sp.Name] = venueID(sy)
		t.byID[venueID(sy)] = sp
	}
	return t
}

// ParseSymbols reads a configured symbol list, a JSON array of
// {"name", "id" (the venue's Symbol (55); default the name), "contract_size", "digits",
// "min_lot", "lot_step", "max_lot" (0: no maximum)}, and checks it (CheckSymbols).
// Unknown keys are refused.
func ParseSymbols(r io.Reader) ([]Symbol, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var in []broker.SymbolEntry
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("fix: symbol list: %w", err)
	}
	out := make([]Symbol, len(in))
	for i, e := range in {
		out[i] = e.Symbol()
	}
	if err := CheckSymbols(out); err != nil {
		return nil, err
	}
	return out, nil
}
