package reconcile

import (
	"errors"
	"fmt"
)

// ErrInvalidSettings is matched (errors.Is) by every error ParseSettings and
// Settings.Validate return.
var ErrInvalidSettings = errors.New("invalid link settings")

// FieldError is one problem with one settings field. Field is the JSON path of the field
// ("sizing.multiplier", "filters.magics[2]").
type FieldError struct {
	Field   string // JSON path of the field
	Problem string // what is wrong with it
}

// Error returns "field: problem".
func (e *FieldError) Error() string { return e.Field + ": " + e.Problem }

// Unwrap makes errors.Is(err, ErrInvalidSettings) hold.
func (e *FieldError) Unwrap() error { return ErrInvalidSettings }

// fieldErrors collects FieldErrors in the order they are found.
type fieldErrors []error

func (fe *fieldErrors) add(field, format string, args ...any) {
	*fe = append(*fe, &FieldError{Field: field, Problem: fmt.Sprintf(format, args...)})
}

// err joins the collected errors, or returns nil when there are none.
func (fe fieldErrors) err() error { return errors.Join(fe...) }
