package console

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/snapcopier/copier/reconcile/protect"
	"github.com/snapcopier/copier/store"
)

// protectionJSON is GET /api/accounts/{id}/protection: the follower's own stop-out limits
// and the state of every scope (its own and each link's with limits) as the owner stored it.
type protectionJSON struct {
	AccountID int64          `json:"account_id"`
	Limits    protect.Limits `json:"limits"`
	Scopes    []scopeJSON    `json:"scopes"`
}

// scopeJSON is one scope's stored state.
type scopeJSON struct {
	LinkID    int64            `json:"link_id"` // 0: the follower's own limits
	Stopped   bool             `json:"stopped"`
	Stop      *protect.StopOut `json:"stop"`
	HighWater float64          `json:"high_water"`
	Day       time.Time        `json:"day,omitzero"`
	DayEquity float64          `json:"day_equity"`
	Resets    int64            `json:"resets"`
	UpdatedAt time.Time        `json:"updated_at"`
	Scope     string           `json:"scope"` // "follower" or "link N", for pages
}

func (s *Server) loadProtection(ctx context.Context, id int64) (protectionJSON, error) {
	out := protectionJSON{AccountID: id, Scopes: []scopeJSON{}}
	raw, err := store.AccountProtection(ctx, s.opts.Pool, id)
	if err != nil {
		return out, err
	}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &out.Limits) // validated when stored
	}
	rows, err := store.ProtectionStates(ctx, s.opts.Pool, id)
	if err != nil {
		return out, err
	}
	now := time.Now()
	for _, r := range rows {
		var st protect.State
		if err := json.Unmarshal(r.State, &st); err != nil {
			continue
		}
		sc := scopeJSON{LinkID: r.LinkID, Stopped: st.Stopped(now), HighWater: st.HighWater, Day: st.Day,
			DayEquity: st.DayEquity, Resets: r.ResetGen, UpdatedAt: r.UpdatedAt, Scope: "follower"}
		if sc.Stopped {
			sc.Stop = st.Stop
		}
		if r.LinkID != 0 {
			sc.Scope = "link " + strconv.FormatInt(r.LinkID, 10)
		}
		out.Scopes = append(out.Scopes, sc)
	}
	return out, nil
}

// apiProtection serves GET /api/accounts/{id}/protection.
func (s *Server) apiProtection(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(r)
	if !ok {
		writeError(w, http.StatusBadRequest, "account id must be a positive integer")
		return
	}
	ctx, cancel := reqCtx(r)
	defer cancel()
	if _, err := store.GetAccountRow(ctx, s.opts.Pool, id); err != nil {
		status, msg := s.storeFailure(err, "account "+strconv.FormatInt(id, 10))
		writeError(w, status, msg)
		return
	}
	s.writeProtection(ctx, w, id)
}

// writeProtection answers with an account's protections.
func (s *Server) writeProtection(ctx context.Context, w http.ResponseWriter, id int64) {
	p, err := s.loadProtection(ctx, id)
	if err != nil {
		status, msg := s.storeFailure(err, "account "+strconv.FormatInt(id, 10))
		writeError(w, status, msg)
		return
	}
	writeJSON(w, http.StatusOK, p)
}

// setProtection validates and stores a follower's own limits. Its problems are field
// errors (422); nothing is stored then.
func (s *Server) setProtection(ctx context.Context, r *http.Request, id int64, l protect.Limits) (int, fieldErrs, error) {
	var fe fieldErrs
	a, err := store.GetAccountRow(ctx, s.opts.Pool, id)
	if err != nil {
		return 0, fe, err
	}
	if a.Role != store.RoleFollower {
		fe.add("limits", "stop-out limits apply to followers only")
	}
	if l.CloseOnly != protect.CopyNormally {
		fe.add("close_only", "set the follower's close-only mode on the account (close_only), not here")
	}
	if err := l.Validate(); err != nil {
		var pe *protect.FieldError
		for _, e := range unjoinErrs(err) {
			if errors.As(e, &pe) {
				fe.add(pe.Field, pe.Problem)
			}
		}
	}
	if fe.any() {
		return http.StatusUnprocessableEntity, fe, nil
	}
	doc, _ := json.Marshal(l)
	if err := store.SetAccountProtection(ctx, s.opts.Pool, id, doc); err != nil {
		return 0, fe, err
	}
	s.log.Info().Str("user", principalOf(r).Name).Int64("account", id).RawJSON("limits", doc).Msg("console: protections set")
	return http.StatusOK, fe, nil
}

func unjoinErrs(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// apiProtectionSet serves PUT /api/accounts/{id}/protection: the body is the follower's
// own limits (an empty object removes them).
func (s *Server) apiProtectionSet(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(r)
	if !ok {
		writeError(w, http.StatusBadRequest, "account id must be a positive integer")
		return
	}
	var l protect.Limits
	if err := decodeJSON(r, &l); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := reqCtx(r)
	defer cancel()
	status, fe, err := s.setProtection(ctx, r, id, l)
	if err != nil {
		status, msg := s.storeFailure(err, "account "+strconv.FormatInt(id, 10))
		writeError(w, status, msg)
		return
	}
	if fe.any() {
		writeJSON(w, status, fe.apiError())
		return
	}
	s.writeProtection(ctx, w, id)
}

// resetInput is the body of POST /api/accounts/{id}/protection/reset.
type resetInput struct {
	// LinkID names the scope: 0 or absent is the follower's own limits.
	LinkID *int64 `json:"link_id"`
}

// errNotStopped explains a reset refused for a scope without a stop-out in force.
var errNotStopped = errors.New("not stopped out: there is nothing to reset")

// resetProtection ends a stop-out: the drawdown and the day's loss are measured again from
// the follower's last reported equity (or, when none was reported, the equity at the
// breach). The owner adopts the new state at its next cycle.
func (s *Server) resetProtection(ctx context.Context, r *http.Request, id, link int64) error {
	now := time.Now()
	err := store.ResetProtection(ctx, s.opts.Pool, id, link, func(doc []byte, equity float64) ([]byte, error) {
		var st protect.State
		if err := json.Unmarshal(doc, &st); err != nil {
			return nil, err
		}
		if equity <= 0 && st.Stop != nil {
			equity = st.Stop.Equity
		}
		next, err := protect.Reset(st, now, equity)
		if errors.Is(err, protect.ErrNotStopped) {
			return nil, store.ErrNotStoppedOut
		}
		if err != nil {
			return nil, err
		}
		return json.Marshal(next)
	})
	if err == nil {
		s.log.Info().Str("user", principalOf(r).Name).Int64("account", id).Int64("link", link).Msg("console: stop-out reset")
	}
	return err
}

// resetFailure maps a reset's error to a status and a message.
func (s *Server) resetFailure(err error, id int64) (int, string) {
	if errors.Is(err, store.ErrNotStoppedOut) {
		return http.StatusConflict, errNotStopped.Error()
	}
	return s.storeFailure(err, "account "+strconv.FormatInt(id, 10))
}

// apiProtectionReset serves POST /api/accounts/{id}/protection/reset.
func (s *Server) apiProtectionReset(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(r)
	if !ok {
		writeError(w, http.StatusBadRequest, "account id must be a positive integer")
		return
	}
	var in resetInput
	if err := decodeOptionalJSON(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	link := int64(0)
	if in.LinkID != nil {
		if *in.LinkID < 0 {
			writeError(w, http.StatusBadRequest, "link_id must be 0 (the follower's own limits) or a link id")
			return
		}
		link = *in.LinkID
	}
	ctx, cancel := reqCtx(r)
	defer cancel()
	if err := s.resetProtection(ctx, r, id, link); err != nil {
		status, msg := s.resetFailure(err, id)
		writeError(w, status, msg)
		return
	}
	s.writeProtection(ctx, w, id)
}

// decodeOptionalJSON is decodeJSON that also takes an empty body (v stays as it is).
func decodeOptionalJSON(r *http.Request, v any) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return errors.New("cannot read the body")
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return nil
	}
	return decodeBody(body, v)
}

// protectionSubmit is the account page's form for the follower's own limits (a JSON
// document in the "limits" field).
func (s *Server) protectionSubmit(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(r)
	if !ok {
		s.refuse(w, r, http.StatusNotFound, "no such account")
		return
	}
	var l protect.Limits
	if doc := strings.TrimSpace(r.PostFormValue("limits")); doc != "" {
		if err := decodeBody([]byte(doc), &l); err != nil {
			s.refuse(w, r, http.StatusUnprocessableEntity, "protections: "+err.Error())
			return
		}
	}
	ctx, cancel := reqCtx(r)
	defer cancel()
	status, fe, err := s.setProtection(ctx, r, id, l)
	if err != nil {
		status, msg := s.storeFailure(err, "account "+strconv.FormatInt(id, 10))
		s.refuse(w, r, status, msg)
		return
	}
	if fe.any() {
		s.refuse(w, r, status, "protections: "+fe.summary())
		return
	}
	http.Redirect(w, r, withDone("/accounts/"+strconv.FormatInt(id, 10), "protections"), http.StatusSeeOther)
}

// protectionResetSubmit is the account page's reset button of one scope.
func (s *Server) protectionResetSubmit(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(r)
	if !ok {
		s.refuse(w, r, http.StatusNotFound, "no such account")
		return
	}
	link, err := strconv.ParseInt(r.PostFormValue("link_id"), 10, 64)
	if err != nil || link < 0 {
		s.refuse(w, r, http.StatusBadRequest, "link_id must be 0 or a link id")
		return
	}
	ctx, cancel := reqCtx(r)
	defer cancel()
	if err := s.resetProtection(ctx, r, id, link); err != nil {
		status, msg := s.resetFailure(err, id)
		s.refuse(w, r, status, msg)
		return
	}
	http.Redirect(w, r, withDone("/accounts/"+strconv.FormatInt(id, 10), "reset"), http.StatusSeeOther)
}
