package console

import (
	"context"
	"errors"
	"net/http"
)

// The create and update operations of accounts and links (createAccount, updateAccount,
// createLink, updateLink) know nothing of HTTP: they take the acting user's name and the
// input, and return the written id or an *opError. The handlers map an opError to a
// status in one place (refusal.status) and show its field errors as JSON or on the form.

// refusal is why an operation refused its input.
type refusal uint8

const (
	refusedInternal    refusal = iota // unexpected: logged
	refusedInvalid                    // the input is malformed or breaks a rule
	refusedConflict                   // the input clashes with what the database holds
	refusedNotFound                   // the account or link does not exist
	refusedUnavailable                // the database did not answer in time
)

// status is the one mapping of a refusal to an HTTP status.
func (k refusal) status() int {
	switch k {
	case refusedInvalid:
		return http.StatusUnprocessableEntity
	case refusedConflict:
		return http.StatusConflict
	case refusedNotFound:
		return http.StatusNotFound
	case refusedUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// opError is a refused create or update: its kind and the field errors that say why, or
// msg when no field is to blame (the thing to update is gone). Nothing was written.
type opError struct {
	kind   refusal
	fields fieldErrs
	msg    string
}

func (e *opError) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return e.fields.summary()
}

// apiError is the JSON body of the refusal.
func (e *opError) apiError() apiError {
	if e.msg != "" {
		return apiError{Error: e.msg}
	}
	return e.fields.apiError()
}

// refused returns fe as an operation's error of kind k.
func refused(k refusal, fe fieldErrs) error { return &opError{kind: k, fields: fe} }

// asOpError returns err as an *opError; any other error is an internal one (the
// operations return no other, so this is a guard, not a path).
func asOpError(err error) *opError {
	var oe *opError
	if errors.As(err, &oe) {
		return oe
	}
	var fe fieldErrs
	fe.add("id", "internal error")
	return &opError{kind: refusedInternal, fields: fe}
}

// storeRefused records a database failure against a field: the operation's error.
func (s *Server) storeRefused(err error, what, field string) error {
	k, msg := s.storeRefusal(err, what)
	var fe fieldErrs
	fe.add(field, msg)
	return refused(k, fe)
}

// storeRefusedWhole is a database failure that no field is to blame for.
func (s *Server) storeRefusedWhole(err error, what string) error {
	k, msg := s.storeRefusal(err, what)
	return &opError{kind: k, msg: msg}
}

// apiWrite is the skeleton of the JSON create and update handlers: decode the body into a
// fresh input, run the operation, and answer with its refusal or with the written
// resource (status on success: 201 for a create, 200 for an update).
func apiWrite[In any](w http.ResponseWriter, r *http.Request, status int,
	op func(ctx context.Context, user string, in *In) (int64, error),
	answer func(ctx context.Context, w http.ResponseWriter, id int64, status int)) {
	var in In
	if err := decodeJSON(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := reqCtx(r)
	defer cancel()
	id, err := op(ctx, principalOf(r).Name, &in)
	if err != nil {
		oe := asOpError(err)
		writeJSON(w, oe.kind.status(), oe.apiError())
		return
	}
	answer(ctx, w, id, status)
}

// formWrite is the skeleton of the HTML create and update handlers. fe holds what reading
// the form found (a number field that is not a number); then shape, the operation's own
// checks, adds every other problem so that all show at once, and nothing runs. Otherwise
// op runs as the request's user: a refusal shows the form again (back) with its status,
// a success redirects to the page op names.
func formWrite(w http.ResponseWriter, r *http.Request, fe fieldErrs, shape func() fieldErrs,
	op func(user string) (next string, err error), back func(status int, fe fieldErrs)) {
	if fe.any() {
		fe.merge(shape())
		back(http.StatusUnprocessableEntity, fe)
		return
	}
	next, err := op(principalOf(r).Name)
	if err != nil {
		oe := asOpError(err)
		back(oe.kind.status(), oe.fields)
		return
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}
