package console

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix"
	"github.com/snapcopier/copier/broker/fix/fixwire"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/reconcile/protect"
	"github.com/snapcopier/copier/store"
)

// Input limits.
const (
	maxLogin    = 64
	maxServer   = 128
	maxPassword = 256
	maxSettings = 64 << 10
)

// maxJSONInt is the largest integer every JSON client reads exactly (2^53 − 1): ids and
// magic numbers above it would change on their way through a JavaScript client.
const maxJSONInt = 1<<53 - 1

var platformRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$`)

// fieldErrs collects one message per input field (the first problem found), plus the
// itemised problems of a link's settings.
type fieldErrs struct {
	m        map[string]string
	settings []settingsProblem
}

func (f *fieldErrs) add(field, msg string) {
	if f.m == nil {
		f.m = map[string]string{}
	}
	if _, ok := f.m[field]; !ok {
		f.m[field] = msg
	}
}

func (f *fieldErrs) any() bool { return len(f.m) > 0 }

// merge adds o's problems to f's (f's message wins for a field both name).
func (f *fieldErrs) merge(o fieldErrs) {
	for k, v := range o.m {
		f.add(k, v)
	}
	if f.settings == nil {
		f.settings = o.settings
	}
}

// summary is one line naming every invalid field, for the API's error message.
func (f *fieldErrs) summary() string {
	var b strings.Builder
	b.WriteString("invalid input: ")
	first := true
	// The form's fields in their order, then any other (the protections' JSON paths) sorted.
	keys := []string{"id", "role", "platform", "login", "server", "password", "master_id", "follower_id", "magic", "settings", "enabled"}
	var rest []string
	for k := range f.m {
		if !slices.Contains(keys, k) {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	for _, k := range append(keys, rest...) {
		if msg, ok := f.m[k]; ok {
			if !first {
				b.WriteString("; ")
			}
			first = false
			b.WriteString(k + ": " + msg)
		}
	}
	return b.String()
}

// apiError returns the API body of the errors.
func (f *fieldErrs) apiError() apiError {
	return apiError{Error: f.summary(), Fields: f.m, SettingsErrors: f.settings}
}

// accountInput is the body of an account create or edit. Absent fields are nil.
type accountInput struct {
	ID       *int64  `json:"id"`
	Platform *string `json:"platform"`
	Role     *string `json:"role"`
	Enabled  *bool   `json:"enabled"`
	Login    *string `json:"login"`
	Server   *string `json:"server"`
	// Password is the broker password: sealed before it is stored, never returned.
	Password *string `json:"password"`
	// ClearPassword removes the stored password.
	ClearPassword bool `json:"clear_password"`
	// CloseOnly is a follower's own close-only mode: "", "let_close" or "close_now".
	CloseOnly *string `json:"close_only"`
	// FIX replaces the account's FIX session settings (absent: unchanged; {}: none).
	FIX *store.FIXSession `json:"fix"`
}

// maxFIXID bounds a FIX session id or user name.
const maxFIXID = 64

// checkFIX validates the FIX session settings: each id goes into a FIX header as it is.
func checkFIX(fe *fieldErrs, f *store.FIXSession) {
	if f == nil {
		return
	}
	for _, v := range []struct {
		field string
		value *string
	}{{"fix.sender_comp_id", &f.SenderCompID}, {"fix.sender_sub_id", &f.SenderSubID}, {"fix.target_comp_id", &f.TargetCompID},
		{"fix.target_sub_id", &f.TargetSubID}, {"fix.username", &f.Username}} {
		s := checkText(fe, v.field, v.value, false, maxFIXID)
		if fe.m[v.field] == "" && strings.ContainsAny(s, " =") {
			fe.add(v.field, "must not contain spaces or '='")
		}
	}
	d, err := fixwire.ParseDialect(f.Dialect)
	if err != nil {
		fe.add("fix.dialect", fmt.Sprintf("must be empty (the node's default) or one of %s", dialectNames()))
	} else {
		f.Dialect = string(d)
	}
	// The position mode: hedging cannot be served where a close is an opposite order
	// (fix44), refused now rather than at the account's first connect. With the dialect
	// left to the node's default, Connect refuses it if the node's is fix44.
	f.PositionMode = strings.TrimSpace(f.PositionMode)
	if mode, err := fix.ParsePositionMode(f.PositionMode); err != nil {
		fe.add("fix.position_mode", "must be empty (the node's default), netting or hedging")
	} else if mode == broker.Hedging && d != "" && !d.Features().PositionIDs {
		fe.add("fix.position_mode", fmt.Sprintf("hedging cannot be served by the %s dialect: a close is an opposite order, which nets (use netting, or a dialect with position ids)", d))
	}
	checkSymbolList(fe, "fix.symbols", f.Symbols)
}

// checkSymbolList checks a configured symbol list (an account's or a platform's) by the
// same rules as the node's list, so a list the console takes is one Connect takes.
func checkSymbolList(fe *fieldErrs, field string, list []store.FIXSymbol) {
	if len(list) > maxFIXSymbols {
		fe.add(field, fmt.Sprintf("at most %d symbols", maxFIXSymbols))
	} else if err := fix.CheckSymbols(actors.FIXSession(store.FIXSession{Symbols: list}).Symbols); err != nil {
		fe.add(field, strings.TrimPrefix(err.Error(), "fix: "))
	}
}

// maxFIXSymbols bounds an account's or a platform's symbol list.
const maxFIXSymbols = 2000

// parseSymbolLines reads the form's symbol list: one symbol a line,
// "NAME ID CONTRACT DIGITS MIN STEP MAX" (MAX 0: none); blank lines are skipped.
// Problems are reported on field.
func parseSymbolLines(fe *fieldErrs, field, text string) []store.FIXSymbol {
	var out []store.FIXSymbol
	for i, line := range strings.Split(text, "\n") {
		w := strings.Fields(line)
		if len(w) == 0 {
			continue
		}
		bad := func() []store.FIXSymbol {
			fe.add(field, fmt.Sprintf("line %d: want NAME ID CONTRACT DIGITS MIN STEP MAX (numbers for the last five)", i+1))
			return nil
		}
		if len(w) != 7 {
			return bad()
		}
		var n [5]float64
		for j, v := range w[2:] {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return bad()
			}
			n[j] = f
		}
		if n[1] != float64(int(n[1])) {
			return bad()
		}
		out = append(out, store.FIXSymbol{Name: w[0], ID: w[1], ContractSize: n[0], Digits: int(n[1]), MinLot: n[2], LotStep: n[3], MaxLot: n[4]})
	}
	return out
}

// symbolLines is the form's text of a symbol list (parseSymbolLines reads it back).
func symbolLines(list []store.FIXSymbol) string {
	var b strings.Builder
	for _, s := range list {
		fmt.Fprintf(&b, "%s %s %s %d %s %s %s\n", s.Name, cmp.Or(s.ID, s.Name), num(s.ContractSize), s.Digits, num(s.MinLot), num(s.LotStep), num(s.MaxLot))
	}
	return b.String()
}

func num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// dialectNames lists the FIX dialects, for messages.
func dialectNames() string {
	names := make([]string, len(fixwire.Dialects))
	for i, d := range fixwire.Dialects {
		names[i] = string(d)
	}
	return strings.Join(names, ", ")
}

// checkText validates a free-text field and returns it trimmed.
func checkText(fe *fieldErrs, field string, v *string, required bool, maxLen int) string {
	if v == nil {
		if required {
			fe.add(field, "required")
		}
		return ""
	}
	s := strings.TrimSpace(*v)
	switch {
	case s == "" && required:
		fe.add(field, "required")
	case !utf8.ValidString(s):
		fe.add(field, "must be valid UTF-8 text")
	case len(s) > maxLen:
		fe.add(field, fmt.Sprintf("at most %d bytes", maxLen))
	case strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		fe.add(field, "must not contain control characters")
	case strings.ContainsRune(s, utf8.RuneError):
		// encoding/json turns a lone surrogate escape (\ud800) into U+FFFD silently.
		fe.add(field, "must not contain U+FFFD (what a lone surrogate escape such as \\ud800 decodes to)")
	case strings.IndexFunc(s, func(r rune) bool { return unicode.Is(unicode.Bidi_Control, r) }) >= 0:
		// U+202E and the like make a name display as another.
		fe.add(field, "must not contain bidirectional formatting characters (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069)")
	}
	*v = s
	return s
}

// validateAccount checks an account input. For a create, id, role, platform and login are
// required; for an edit (create false) every field is optional and the id cannot change.
// Messages never repeat the password.
func (s *Server) validateAccount(in *accountInput, create bool, pathID int64) fieldErrs {
	var fe fieldErrs
	if create {
		if in.ID == nil {
			fe.add("id", "required: the account's number (a positive integer)")
		} else if *in.ID <= 0 {
			fe.add("id", "must be a positive integer")
		} else if *in.ID > maxJSONInt {
			fe.add("id", fmt.Sprintf("must be at most %d (2^53 − 1, so every JSON client reads it exactly)", int64(maxJSONInt)))
		}
	} else if in.ID != nil && *in.ID != pathID {
		fe.add("id", "an account's id cannot change")
	}
	if in.Role != nil || create {
		if in.Role == nil || *in.Role == "" {
			fe.add("role", "required: master or follower")
		} else if !store.Role(*in.Role).Valid() {
			fe.add("role", "must be master or follower")
		}
	}
	if in.Platform != nil || create {
		p := checkText(&fe, "platform", in.Platform, true, 32)
		if p != "" && fe.m["platform"] == "" && !platformRE.MatchString(p) {
			fe.add("platform", "letters, digits, '.', '_' and '-' only (e.g. mt4, mt5, sim)")
		}
	}
	checkText(&fe, "login", in.Login, create, maxLogin)
	if in.Login != nil && *in.Login == "" {
		fe.add("login", "required")
	}
	checkText(&fe, "server", in.Server, false, maxServer)
	checkFIX(&fe, in.FIX)
	if c := in.CloseOnly; c != nil {
		switch protect.CloseOnly(*c) {
		case protect.CopyNormally, protect.LetClose, protect.CloseNow:
			if *c != "" && in.Role != nil && *in.Role == string(store.RoleMaster) {
				fe.add("close_only", "applies to followers only")
			}
		default:
			fe.add("close_only", fmt.Sprintf("must be %q (copy normally), %q (copy nothing new) or %q (copy nothing new and close the copies)",
				protect.CopyNormally, protect.LetClose, protect.CloseNow))
		}
	}
	if in.Password != nil {
		pw := *in.Password
		switch {
		case pw == "" && !create:
			fe.add("password", "must not be empty (to remove the password, use clear_password)")
		case in.ClearPassword && pw != "":
			fe.add("password", "give a new password or clear it, not both")
		case len(pw) > maxPassword:
			fe.add("password", fmt.Sprintf("at most %d bytes", maxPassword))
		case !utf8.ValidString(pw) || strings.ContainsRune(pw, 0):
			fe.add("password", "must be text without NUL characters")
		case pw != "" && s.opts.Sealer == nil:
			fe.add("password", "cannot be stored: this console has no sealing key (set "+EnvKey+")")
		}
	}
	return fe
}

// sealPassword seals the input's password, if any.
func (s *Server) sealPassword(in *accountInput) ([]byte, error) {
	if in.Password == nil || *in.Password == "" {
		return nil, nil
	}
	return s.opts.Sealer.Seal(*in.Password)
}

// accountConflict maps a unique violation of trading_accounts to a field error.
func accountConflict(err error, id int64) (fieldErrs, bool) {
	var fe fieldErrs
	c, ok := store.UniqueViolation(err)
	if !ok {
		return fe, false
	}
	switch c {
	case "trading_accounts_pkey":
		fe.add("id", "an account with id "+strconv.FormatInt(id, 10)+" exists already")
	default:
		fe.add("login", "another account has this login on this platform and server")
	}
	return fe, true
}

// linkInput is the body of a link create or edit. Absent fields are nil.
type linkInput struct {
	MasterID   *int64 `json:"master_id"`
	FollowerID *int64 `json:"follower_id"`
	Enabled    *bool  `json:"enabled"`
	Magic      *int64 `json:"magic"`
	// Settings is the link's settings object (reconcile.Settings); {} takes the defaults.
	Settings json.RawMessage `json:"settings"`
}

// checkSettings validates a settings document with reconcile.ParseSettings and returns it
// compacted (the operator's own document, not the defaults filled in).
func checkSettings(fe *fieldErrs, raw []byte) []byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	if len(raw) > maxSettings {
		fe.add("settings", fmt.Sprintf("at most %d bytes", maxSettings))
		return nil
	}
	if raw[0] != '{' {
		fe.add("settings", `must be a JSON object, e.g. {} or {"sizing": {"mode": "fixed_lot", "fixed_lot": 0.1}}`)
		return nil
	}
	if !utf8.Valid(raw) {
		fe.add("settings", "must be valid UTF-8 text")
		return nil
	}
	if _, err := reconcile.ParseSettings(raw); err != nil {
		fe.settings = settingsProblems(err)
		var parts []string
		for _, p := range fe.settings {
			if p.Field != "" {
				parts = append(parts, p.Field+": "+p.Problem)
			} else {
				parts = append(parts, p.Problem)
			}
		}
		fe.add("settings", strings.Join(parts, "; "))
		return nil
	}
	// Stored as re-encoded from its decoded value: escapes the database refuses (a lone
	// surrogate) become what Go read; a NUL, which it refuses too, is refused here.
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		fe.add("settings", "malformed JSON")
		return nil
	}
	if hasNUL(doc) {
		fe.add("settings", `must not contain the NUL character (\u0000)`)
		return nil
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		fe.add("settings", "malformed JSON")
		return nil
	}
	return bytes.TrimSpace(out.Bytes())
}

// hasNUL reports whether a decoded JSON value has a NUL character in any string or key.
func hasNUL(v any) bool {
	switch x := v.(type) {
	case string:
		return strings.IndexByte(x, 0) >= 0
	case []any:
		for _, e := range x {
			if hasNUL(e) {
				return true
			}
		}
	case map[string]any:
		for k, e := range x {
			if strings.IndexByte(k, 0) >= 0 || hasNUL(e) {
				return true
			}
		}
	}
	return false
}

// settingsProblems flattens a ParseSettings error into its field problems.
func settingsProblems(err error) []settingsProblem {
	var out []settingsProblem
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		var f *reconcile.FieldError
		if errors.As(e, &f) {
			out = append(out, settingsProblem{Field: f.Field, Problem: f.Problem})
			return
		}
		msg := strings.TrimPrefix(e.Error(), reconcile.ErrInvalidSettings.Error()+": ")
		msg = strings.TrimPrefix(msg, "json: ")
		out = append(out, settingsProblem{Problem: msg})
	}
	walk(err)
	return out
}

// validateLinkShape checks a link input without the database. For a create, master_id,
// follower_id and magic are required; for an edit master_id and follower_id cannot change.
func validateLinkShape(in *linkInput, create bool, current store.LinkRow) (fieldErrs, []byte) {
	var fe fieldErrs
	if create {
		if in.MasterID == nil || *in.MasterID <= 0 {
			fe.add("master_id", "required: the id of a master account")
		}
		if in.FollowerID == nil || *in.FollowerID <= 0 {
			fe.add("follower_id", "required: the id of a follower account")
		}
		if in.MasterID != nil && in.FollowerID != nil && *in.MasterID == *in.FollowerID && *in.MasterID > 0 {
			fe.add("follower_id", "must differ from the master")
		}
		if in.Magic == nil {
			fe.add("magic", "required: a positive number that marks this link's copies")
		}
	} else {
		if in.MasterID != nil && *in.MasterID != current.MasterID {
			fe.add("master_id", "a link's master cannot change: create a new link")
		}
		if in.FollowerID != nil && *in.FollowerID != current.FollowerID {
			fe.add("follower_id", "a link's follower cannot change: create a new link")
		}
	}
	if in.Magic != nil && *in.Magic <= 0 {
		fe.add("magic", "must be greater than 0")
	}
	if in.Magic != nil && *in.Magic > maxJSONInt {
		fe.add("magic", fmt.Sprintf("must be at most %d (2^53 − 1, so every JSON client reads it exactly)", int64(maxJSONInt)))
	}
	for _, f := range []struct {
		name string
		v    *int64
	}{{"master_id", in.MasterID}, {"follower_id", in.FollowerID}} {
		if f.v != nil && *f.v > maxJSONInt {
			fe.add(f.name, fmt.Sprintf("must be at most %d", int64(maxJSONInt)))
		}
	}
	var settings []byte
	if in.Settings != nil || create {
		settings = checkSettings(&fe, in.Settings)
	}
	return fe, settings
}
