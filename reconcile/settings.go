package reconcile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"

	"github.com/snapcopier/copier/internal/strictjson"
	"github.com/snapcopier/copier/reconcile/protect"
)

// Settings is the configuration of one copy link, stored as the jsonb column
// copy_links.settings. The zero value is not valid: start from DefaultSettings, or parse
// with ParseSettings, which starts from the defaults so that "{}" is a complete, valid
// configuration. Fields whose default is not their zero value are always written out, so a
// marshalled Settings parses back to itself.
type Settings struct {
	// Sizing decides the follower volume of each copy.
	Sizing Sizing `json:"sizing"`
	// Symbols maps master symbol names to follower symbol names.
	Symbols SymbolMap `json:"symbols,omitzero"`
	// Reverse opens every copy on the opposite side, with stop-loss and take-profit swapped.
	Reverse bool `json:"reverse,omitempty"`
	// Filters select which master positions are copied.
	Filters Filters `json:"filters,omitzero"`
	// Stops is the SL/TP policy.
	Stops Stops `json:"stops"`
	// Limits cap the copies of this link on the follower.
	Limits Limits `json:"limits,omitzero"`
	// Window bounds late copies.
	Window Window `json:"window"`
	// Protect holds the link's protections (package reconcile/protect): its close-only mode.
	Protect protect.Limits `json:"protect,omitzero"`
}

// DefaultMaxAgeSeconds is the default opening window: a master position older than this is
// not copied any more.
const DefaultMaxAgeSeconds = 60

// DefaultSettings returns the settings of a new link: the master's volume (multiplier 1)
// aligned by contract size, same symbol names, everything copied, SL/TP copied, no limits,
// and copies opened only within DefaultMaxAgeSeconds of the master's open.
func DefaultSettings() Settings {
	return Settings{
		Sizing: Sizing{
			Mode:              SizeLotMultiplier,
			Multiplier:        1,
			AlignContractSize: true,
		},
		Stops:  Stops{Mode: StopsCopy},
		Window: Window{MaxAgeSeconds: DefaultMaxAgeSeconds},
	}
}

// ParseSettings decodes the JSON of a link's settings on top of DefaultSettings (absent
// fields keep their defaults), rejects unknown fields and trailing data, and validates the
// result. Every error matches ErrInvalidSettings.
func ParseSettings(data []byte) (Settings, error) {
	s := DefaultSettings()
	// encoding/json matches keys case-insensitively and takes the last of a repeated key;
	// the documented names are exact and a key appears once.
	if err := strictjson.Check(data, reflect.TypeOf(&s)); err != nil {
		var fe *strictjson.FieldError
		if errors.As(err, &fe) {
			return Settings{}, &FieldError{Field: fe.Path, Problem: fe.Err.Error() + " (names are case-sensitive)"}
		}
		if errors.Is(err, strictjson.ErrTrailingData) {
			return Settings{}, fmt.Errorf("%w: trailing data after the settings object", ErrInvalidSettings)
		}
		// Syntax errors: reported below by the decoder, with its offset.
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Settings{}, fmt.Errorf("%w: %w", ErrInvalidSettings, err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		return Settings{}, fmt.Errorf("%w: trailing data after the settings object", ErrInvalidSettings)
	}
	s.normalize()
	if err := s.Validate(); err != nil {
		return Settings{}, err
	}
	return s, nil
}

// Validate reports every problem of s, each as a *FieldError naming the JSON field; the
// joined error matches ErrInvalidSettings. It returns nil for valid settings.
func (s Settings) Validate() error {
	var fe fieldErrors
	s.Sizing.validate(&fe)
	s.Symbols.validate(&fe)
	s.Filters.validate(&fe)
	s.Stops.validate(&fe)
	s.Limits.validate(&fe)
	s.Window.validate(&fe)
	if err := s.Protect.Validate(); err != nil {
		for _, e := range unjoin(err) {
			var pe *protect.FieldError
			if errors.As(e, &pe) {
				fe.add("protect."+pe.Field, "%s", pe.Problem)
			}
		}
	}
	return fe.err()
}

// normalize turns empty lists and maps into nil, so that equal settings compare equal
// whatever JSON they came from.
func (s *Settings) normalize() {
	if len(s.Symbols.Pairs) == 0 {
		s.Symbols.Pairs = nil
	}
	if len(s.Filters.IncludeSymbols) == 0 {
		s.Filters.IncludeSymbols = nil
	}
	if len(s.Filters.ExcludeSymbols) == 0 {
		s.Filters.ExcludeSymbols = nil
	}
	if len(s.Filters.Magics) == 0 {
		s.Filters.Magics = nil
	}
	if len(s.Filters.ExcludeMagics) == 0 {
		s.Filters.ExcludeMagics = nil
	}
}

// unjoin returns the errors joined in err (errors.Join), or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
