package console

// Helpers shared by the HTML forms (accounts, links, protections, switches).

import (
	"net/http"
	"strconv"
	"strings"
)

// withDone adds done=<what> to a local URL.
func withDone(u, done string) string {
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + "done=" + done
}

// formInt parses an integer form field; an empty field is nil.
func formInt(fe *fieldErrs, field, v string) *int64 {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		fe.add(field, "must be a whole number")
		return nil
	}
	return &n
}

// formStr reads a text field; a missing field is "" (the form always sends its fields).
func formStr(r *http.Request, field string) *string {
	v := r.PostFormValue(field)
	return &v
}

// deref is *p, or "" for nil: an input field as the form shows it back.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// formChecked reads a checkbox: "on" (a browser's value) or "true".
func formChecked(r *http.Request, field string) bool {
	v := r.PostFormValue(field)
	return v == "on" || v == "true"
}

// requireMagic records a missing magic number, unless the field is already refused.
func requireMagic(fe *fieldErrs, in *linkInput) {
	if in.Magic == nil && fe.m["magic"] == "" {
		fe.add("magic", "required: a positive number that marks this link's copies")
	}
}
