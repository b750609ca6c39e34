// Package strictjson decodes JSON from untrusted clients exactly as documented: one
// object, keys spelled exactly as the Go field's json tag (encoding/json matches them
// case-insensitively), no key twice, no unknown key, nothing after the value, valid UTF-8.
// encoding/json does the decoding; this package only refuses what it would let through.
package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode/utf8"
)

// Error kinds; every error of Decode wraps one of them or is encoding/json's.
var (
	// ErrUnknownField: a key no field is tagged with (also a wrongly-cased one).
	ErrUnknownField = errors.New("unknown field")
	// ErrDuplicateField: a key given twice in one object.
	ErrDuplicateField = errors.New("duplicate field")
	// ErrTrailingData: anything but white space after the value.
	ErrTrailingData = errors.New("trailing data after the JSON value")
	// ErrInvalidUTF8: the text is not valid UTF-8.
	ErrInvalidUTF8 = errors.New("not valid UTF-8")
	// ErrEmpty: no value at all.
	ErrEmpty = errors.New("empty: want a JSON object")
	// ErrNotObject: a value other than an object (null, an array, a string, ...).
	ErrNotObject = errors.New("want a JSON object")
)

// FieldError names the key a structural problem was found at (a dotted path).
type FieldError struct {
	Path string
	Err  error
}

func (e *FieldError) Error() string { return e.Err.Error() + " " + `"` + e.Path + `"` }
func (e *FieldError) Unwrap() error { return e.Err }

// Decode decodes the JSON object data into v (a pointer), refusing everything the
// package doc lists and any value but an object.
func Decode(data []byte, v any) error {
	if !utf8.Valid(data) {
		return ErrInvalidUTF8
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return ErrEmpty
	}
	if trimmed[0] != '{' {
		return ErrNotObject
	}
	if err := Check(data, reflect.TypeOf(v)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return ErrTrailingData
	}
	return nil
}

// Check walks data against type t and reports the first key that does not match a json
// tag exactly, or appears twice, and trailing data. It does not check value types (the
// decoder does). Values of a type with its own UnmarshalJSON or UnmarshalText, and
// json.RawMessage, are not looked into.
func Check(data []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := walk(dec, t, ""); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return ErrTrailingData
	}
	return nil
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// opaque reports whether values of t decode themselves.
func opaque(t reflect.Type) bool {
	if t == nil {
		return true
	}
	pt := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshaler) || pt.Implements(jsonUnmarshaler) ||
		t.Implements(textUnmarshaler) || pt.Implements(textUnmarshaler)
}

// walk consumes one value from dec, checking it against t (nil: anything).
func walk(dec *json.Decoder, t reflect.Type, path string) error {
	for t != nil && t.Kind() == reflect.Pointer && !opaque(t) {
		t = t.Elem()
	}
	if t != nil && (opaque(t) || t.Kind() == reflect.Interface) {
		t = nil
	}
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) && path == "" {
			return ErrEmpty
		}
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil // a scalar: the decoder checks its type
	}
	switch d {
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if err := walk(dec, elem, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		_, err := dec.Token()
		return err
	case '{':
		var fields map[string]reflect.Type
		var elem reflect.Type
		isStruct := t != nil && t.Kind() == reflect.Struct
		if isStruct {
			fields = jsonFields(t)
		} else if t != nil && t.Kind() == reflect.Map {
			elem = t.Elem()
		}
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := kt.(string)
			p := key
			if path != "" {
				p = path + "." + key
			}
			if seen[key] {
				return &FieldError{Path: p, Err: ErrDuplicateField}
			}
			seen[key] = true
			ft := elem
			if isStruct {
				var known bool
				ft, known = fields[key]
				if !known {
					return &FieldError{Path: p, Err: ErrUnknownField}
				}
			}
			if err := walk(dec, ft, p); err != nil {
				return err
			}
		}
		_, err := dec.Token()
		return err
	}
	return nil
}

// jsonFields maps the exact JSON names of t's fields (embedded structs flattened, as
// encoding/json does) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFields(ft) {
					if _, dup := out[k]; !dup {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}
