package console

import (
	"context"
	"net/http"
	"strconv"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snapcopier/copier/store"
)

// switchable is something the console switches on and off: an account or a link. The
// API and the page forms for both share one set of handlers.
type switchable struct {
	kind  string // "account" or "link": in messages, logs and log fields
	set   func(ctx context.Context, pool *pgxpool.Pool, id int64, on bool) error
	write func(s *Server, ctx context.Context, w http.ResponseWriter, id int64, status int)
	back  func(id int64) string // where a page form returns by default
}

var (
	accountSwitch = switchable{kind: "account", set: store.SetAccountEnabled,
		write: (*Server).writeAccount,
		back:  func(id int64) string { return "/accounts/" + strconv.FormatInt(id, 10) }}
	linkSwitch = switchable{kind: "link", set: store.SetLinkEnabled,
		write: (*Server).writeLink,
		back:  func(int64) string { return "/links" }}
)

// setEnabled switches one account or link and logs who did it.
func (s *Server) setEnabled(ctx context.Context, r *http.Request, t switchable, id int64, on bool) error {
	if err := t.set(ctx, s.opts.Pool, id, on); err != nil {
		return err
	}
	s.log.Info().Str("user", principalOf(r).Name).Int64(t.kind, id).Bool("enabled", on).Msg("console: " + t.kind + " switched")
	return nil
}

// apiEnable serves POST /api/{accounts,links}/{id}/enable and /disable.
func (s *Server) apiEnable(t switchable, on bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathID(r)
		if !ok {
			writeError(w, http.StatusBadRequest, t.kind+" id must be a positive integer")
			return
		}
		if err := decodeNoBody(r); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		ctx, cancel := reqCtx(r)
		defer cancel()
		if err := s.setEnabled(ctx, r, t, id, on); err != nil {
			status, msg := s.storeFailure(err, t.kind+" "+strconv.FormatInt(id, 10))
			writeError(w, status, msg)
			return
		}
		t.write(s, ctx, w, id, http.StatusOK)
	}
}

// enableSubmit is the page form that enables or disables an account or a link.
func (s *Server) enableSubmit(t switchable, on bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, ok := pathID(r)
		if !ok {
			s.refuse(w, r, http.StatusNotFound, "no such "+t.kind)
			return
		}
		ctx, cancel := reqCtx(r)
		defer cancel()
		if err := s.setEnabled(ctx, r, t, id, on); err != nil {
			status, msg := s.storeFailure(err, t.kind+" "+strconv.FormatInt(id, 10))
			s.refuse(w, r, status, msg)
			return
		}
		done := "disabled"
		if on {
			done = "enabled"
		}
		back := t.back(id)
		if b := r.PostFormValue("back"); b != "" {
			back = safeNext(b)
		}
		http.Redirect(w, r, withDone(back, done), http.StatusSeeOther)
	}
}
