package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"

	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/reconcile/protect"
	"github.com/snapcopier/copier/store"
)

// settingsSummary describes a link's settings in one line for tables.
func settingsSummary(raw []byte) string {
	st, err := reconcile.ParseSettings(raw)
	if err != nil {
		return "invalid settings: " + err.Error()
	}
	var parts []string
	switch z := st.Sizing; z.Mode {
	case reconcile.SizeFixedLot:
		parts = append(parts, fmt.Sprintf("fixed %g lot", z.FixedLot))
	case reconcile.SizeRiskPercent:
		parts = append(parts, fmt.Sprintf("risk %g%%", z.RiskPercent))
	default:
		parts = append(parts, fmt.Sprintf("%s ×%g", z.Mode, z.Multiplier))
	}
	if st.Reverse {
		parts = append(parts, "reversed")
	}
	if st.Stops.Mode != reconcile.StopsCopy {
		parts = append(parts, "stops "+st.Stops.Mode.String())
	}
	if len(st.Filters.IncludeSymbols) > 0 || len(st.Filters.ExcludeSymbols) > 0 || len(st.Filters.Magics) > 0 || len(st.Filters.ExcludeMagics) > 0 {
		parts = append(parts, "filtered")
	}
	switch st.Protect.CloseOnly {
	case protect.LetClose:
		parts = append(parts, "CLOSE-ONLY (letting copies close)")
	case protect.CloseNow:
		parts = append(parts, "CLOSE-ONLY (copies closed)")
	}
	if st.Window.MaxAgeSeconds == 0 {
		parts = append(parts, "any age")
	} else {
		parts = append(parts, fmt.Sprintf("≤%ds old", st.Window.MaxAgeSeconds))
	}
	return strings.Join(parts, ", ")
}

// checkLinkAccounts validates a new link's accounts against the database.
func (s *Server) checkLinkAccounts(ctx context.Context, fe *fieldErrs, masterID, followerID int64) error {
	for _, c := range []struct {
		field string
		id    int64
		role  store.Role
	}{{"master_id", masterID, store.RoleMaster}, {"follower_id", followerID, store.RoleFollower}} {
		a, err := store.GetAccountRow(ctx, s.opts.Pool, c.id)
		switch {
		case err == nil && a.Role != c.role:
			fe.add(c.field, fmt.Sprintf("account %d is a %s, not a %s", c.id, a.Role, c.role))
		case err == nil:
		case isNotFound(err):
			fe.add(c.field, fmt.Sprintf("no account %d", c.id))
		default:
			return err
		}
	}
	return nil
}

// checkMagic refuses a magic number another link of the follower uses: the engine tells a
// link's copies apart by it.
func (s *Server) checkMagic(ctx context.Context, fe *fieldErrs, followerID, magic, exceptLink int64) error {
	used, err := store.MagicInUse(ctx, s.opts.Pool, followerID, magic, exceptLink)
	if err != nil {
		return err
	}
	if used {
		fe.add("magic", fmt.Sprintf("another link of follower %d uses magic %d: give every link of a follower its own", followerID, magic))
	}
	return nil
}

// createLink validates and inserts user's link; on refusal (an *opError) nothing is
// written.
func (s *Server) createLink(ctx context.Context, user string, in *linkInput) (int64, error) {
	fe, settings := validateLinkShape(in, true, store.LinkRow{})
	if fe.any() {
		return 0, refused(refusedInvalid, fe)
	}
	if err := s.checkLinkAccounts(ctx, &fe, *in.MasterID, *in.FollowerID); err != nil {
		return 0, s.storeRefused(err, "link", "master_id")
	}
	if !fe.any() {
		if err := s.checkMagic(ctx, &fe, *in.FollowerID, *in.Magic, 0); err != nil {
			return 0, s.storeRefused(err, "link", "magic")
		}
		if fe.any() {
			return 0, refused(refusedConflict, fe) // the magic is another link's
		}
	}
	if fe.any() {
		return 0, refused(refusedInvalid, fe)
	}
	l := store.Link{MasterID: *in.MasterID, FollowerID: *in.FollowerID, Enabled: in.Enabled == nil || *in.Enabled, Magic: *in.Magic, Settings: settings}
	id, err := store.CreateLink(ctx, s.opts.Pool, l)
	if err != nil {
		if magicClash(&fe, err, l.FollowerID, l.Magic) {
			return 0, refused(refusedConflict, fe)
		}
		if _, dup := store.UniqueViolation(err); dup {
			fe.add("master_id", fmt.Sprintf("a link from master %d to follower %d exists already: edit it instead", l.MasterID, l.FollowerID))
			return 0, refused(refusedConflict, fe)
		}
		return 0, s.storeRefused(err, "link", "master_id")
	}
	s.log.Info().Str("user", user).Int64("link", id).Int64("master", l.MasterID).Int64("follower", l.FollowerID).
		Int64("magic", l.Magic).Msg("console: link created")
	return id, nil
}

// updateLink validates and applies user's edit of link cur; on refusal (an *opError)
// nothing is written.
func (s *Server) updateLink(ctx context.Context, user string, cur store.LinkRow, in *linkInput) error {
	fe, settings := validateLinkShape(in, false, cur)
	if fe.any() {
		return refused(refusedInvalid, fe)
	}
	l := cur.Link
	if in.Enabled != nil {
		l.Enabled = *in.Enabled
	}
	if in.Magic != nil {
		l.Magic = *in.Magic
		if err := s.checkMagic(ctx, &fe, cur.FollowerID, l.Magic, cur.ID); err != nil {
			return s.storeRefused(err, "link", "magic")
		}
		if fe.any() {
			return refused(refusedConflict, fe) // the magic is another link's
		}
	}
	if settings != nil {
		l.Settings = settings
	}
	if l.Enabled == cur.Enabled && l.Magic == cur.Magic && sameJSON(l.Settings, cur.Settings) {
		return nil // a no-op: nothing to write, no reload for the owner
	}
	if err := store.UpdateLink(ctx, s.opts.Pool, l); err != nil {
		if magicClash(&fe, err, l.FollowerID, l.Magic) {
			return refused(refusedConflict, fe)
		}
		return s.storeRefused(err, "link", "settings")
	}
	s.log.Info().Str("user", user).Int64("link", l.ID).Bool("enabled", l.Enabled).Int64("magic", l.Magic).
		Msg("console: link updated")
	return nil
}

// magicClash records a write refused by UNIQUE (follower_id, magic) (a link written
// between checkMagic and the write): a conflict on the magic field.
func magicClash(fe *fieldErrs, err error, followerID, magic int64) bool {
	if c, ok := store.UniqueViolation(err); !ok || c != store.LinkMagicConstraint {
		return false
	}
	fe.add("magic", fmt.Sprintf("another link of follower %d uses magic %d: give every link of a follower its own", followerID, magic))
	return true
}

// sameJSON reports whether two JSON documents have the same value (the database keeps
// settings as jsonb, which does not keep the text as given).
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }

// apiLinks serves GET /api/links?account=&master=&follower=&page=&size=.
func (s *Server) apiLinks(w http.ResponseWriter, r *http.Request) {
	q, err := parseLinksQuery(r.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := reqCtx(r)
	defer cancel()
	rows, total, err := store.FindLinks(ctx, s.opts.Pool, q.LinkQuery)
	if err != nil {
		status, msg := s.storeFailure(err, "links")
		writeError(w, status, msg)
		return
	}
	out := struct {
		Total int        `json:"total"`
		Page  int        `json:"page"`
		Size  int        `json:"size"`
		Links []linkJSON `json:"links"`
	}{total, q.page, q.Limit, make([]linkJSON, 0, len(rows))}
	for _, l := range rows {
		out.Links = append(out.Links, newLinkJSON(l))
	}
	writeJSON(w, http.StatusOK, out)
}

type linksQuery struct {
	store.LinkQuery
	page int
}

func parseLinksQuery(v url.Values) (linksQuery, error) {
	q := linksQuery{page: 1}
	q.Limit = 100
	for _, f := range []struct {
		name string
		dst  *int64
	}{{"account", &q.AccountID}, {"master", &q.MasterID}, {"follower", &q.FollowerID}} {
		if s := v.Get(f.name); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n <= 0 {
				return q, fmt.Errorf("%s: must be a positive account id", f.name)
			}
			*f.dst = n
		}
	}
	if s := v.Get("page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1_000_000 {
			return q, fmt.Errorf("page: must be a positive integer")
		}
		q.page = n
	}
	if s := v.Get("size"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > store.MaxPageSize {
			return q, fmt.Errorf("size: must be from 1 to %d", store.MaxPageSize)
		}
		q.Limit = n
	}
	q.Offset = (q.page - 1) * q.Limit
	return q, nil
}

// apiLink serves GET /api/links/{id}.
func (s *Server) apiLink(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(r)
	if !ok {
		writeError(w, http.StatusBadRequest, "link id must be a positive integer")
		return
	}
	ctx, cancel := reqCtx(r)
	defer cancel()
	s.writeLink(ctx, w, id, http.StatusOK)
}

func (s *Server) writeLink(ctx context.Context, w http.ResponseWriter, id int64, status int) {
	l, err := store.GetLinkRow(ctx, s.opts.Pool, id)
	if err != nil {
		st, msg := s.storeFailure(err, "link "+strconv.FormatInt(id, 10))
		writeError(w, st, msg)
		return
	}
	if status == http.StatusCreated {
		w.Header().Set("Location", "/api/links/"+strconv.FormatInt(id, 10))
	}
	writeJSON(w, status, newLinkJSON(l))
}

// apiLinkCreate serves POST /api/links.
func (s *Server) apiLinkCreate(w http.ResponseWriter, r *http.Request) {
	apiWrite(w, r, http.StatusCreated, s.createLink, s.writeLink)
}

// apiLinkUpdate serves PATCH /api/links/{id}.
func (s *Server) apiLinkUpdate(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(r)
	if !ok {
		writeError(w, http.StatusBadRequest, "link id must be a positive integer")
		return
	}
	apiWrite(w, r, http.StatusOK, func(ctx context.Context, user string, in *linkInput) (int64, error) {
		cur, err := store.GetLinkRow(ctx, s.opts.Pool, id)
		if err != nil {
			return 0, s.storeRefusedWhole(err, "link "+strconv.FormatInt(id, 10))
		}
		return id, s.updateLink(ctx, user, cur, in)
	}, s.writeLink)
}

// linksView is the links page's data.
type linksView struct {
	AccountID  string
	Links      []linkRowView
	Total      int
	Page       int
	Prev, Next string
	Error      string
}

// linksPage serves GET /links.
func (s *Server) linksPage(w http.ResponseWriter, r *http.Request) {
	q, err := parseLinksQuery(r.URL.Query())
	v := linksView{AccountID: r.URL.Query().Get("account"), Page: q.page}
	if err != nil {
		v.Error = err.Error()
		s.renderPage(w, r, http.StatusBadRequest, "links", "Links", "links", v)
		return
	}
	ctx, cancel := reqCtx(r)
	defer cancel()
	rows, total, err := store.FindLinks(ctx, s.opts.Pool, q.LinkQuery)
	if err != nil {
		st, msg := s.storeFailure(err, "links")
		s.refuse(w, r, st, msg)
		return
	}
	v.Total = total
	for _, l := range rows {
		v.Links = append(v.Links, linkRowView{LinkRow: l, Summary: settingsSummary(l.Settings)})
	}
	pageURL := func(p int) string {
		u := url.Values{}
		if v.AccountID != "" {
			u.Set("account", v.AccountID)
		}
		u.Set("page", strconv.Itoa(p))
		return "/links?" + u.Encode()
	}
	if q.page > 1 {
		v.Prev = pageURL(q.page - 1)
	}
	if q.Offset+len(rows) < total {
		v.Next = pageURL(q.page + 1)
	}
	s.renderPage(w, r, http.StatusOK, "links", "Links", "links", v)
}

// linkRedirect sends GET /links/{id} to the follower's page.
func (s *Server) linkRedirect(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(r)
	if !ok {
		s.refuse(w, r, http.StatusNotFound, "no such link")
		return
	}
	ctx, cancel := reqCtx(r)
	defer cancel()
	l, err := store.GetLinkRow(ctx, s.opts.Pool, id)
	if err != nil {
		st, msg := s.storeFailure(err, "link "+strconv.FormatInt(id, 10))
		s.refuse(w, r, st, msg)
		return
	}
	http.Redirect(w, r, "/accounts/"+strconv.FormatInt(l.FollowerID, 10)+"#link-"+strconv.FormatInt(id, 10), http.StatusSeeOther)
}

// linkForm is the link form's data.
type linkForm struct {
	Create         bool
	ID             int64
	MasterID       string
	FollowerID     string
	MasterLogin    string
	FollowerLogin  string
	Magic          string
	Enabled        bool
	Settings       string
	Errors         map[string]string
	SettingsErrors []settingsProblem
	Defaults       string
}

func defaultsJSON() string {
	b, _ := json.MarshalIndent(reconcile.DefaultSettings(), "", "  ")
	return string(b)
}

// linkNewPage serves GET /links/new?master=&follower=.
func (s *Server) linkNewPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := linkForm{Create: true, Enabled: true, MasterID: q.Get("master"), FollowerID: q.Get("follower"), Settings: "{}", Defaults: defaultsJSON()}
	s.renderPage(w, r, http.StatusOK, "link_form", "New link", "links", f)
}

// linkFromForm reads the link form.
func linkFromForm(r *http.Request, fe *fieldErrs, create bool) *linkInput {
	in := &linkInput{Magic: formInt(fe, "magic", r.PostFormValue("magic"))}
	if create {
		in.MasterID = formInt(fe, "master_id", r.PostFormValue("master_id"))
		in.FollowerID = formInt(fe, "follower_id", r.PostFormValue("follower_id"))
	}
	requireMagic(fe, in) // the form always sends it; an empty field would keep nothing
	on := formChecked(r, "enabled")
	in.Enabled = &on
	in.Settings = json.RawMessage(r.PostFormValue("settings"))
	return in
}

func (s *Server) linkFormBack(w http.ResponseWriter, r *http.Request, status int, fe fieldErrs, create bool, cur store.LinkRow) {
	f := linkForm{Create: create, ID: cur.ID, MasterID: strings.TrimSpace(r.PostFormValue("master_id")), FollowerID: strings.TrimSpace(r.PostFormValue("follower_id")),
		MasterLogin: cur.MasterLogin, FollowerLogin: cur.FollowerLogin,
		Magic: strings.TrimSpace(r.PostFormValue("magic")), Enabled: r.PostFormValue("enabled") == "on",
		Settings: r.PostFormValue("settings"), Errors: fe.m, SettingsErrors: fe.settings, Defaults: defaultsJSON()}
	title := "New link"
	if !create {
		f.MasterID, f.FollowerID = strconv.FormatInt(cur.MasterID, 10), strconv.FormatInt(cur.FollowerID, 10)
		title = "Edit link " + strconv.FormatInt(cur.ID, 10)
	}
	s.renderPage(w, r, status, "link_form", title, "links", f)
}

// linkNewSubmit serves POST /links/new.
func (s *Server) linkNewSubmit(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := reqCtx(r)
	defer cancel()
	var fe fieldErrs
	in := linkFromForm(r, &fe, true)
	formWrite(w, r, fe, func() fieldErrs { shape, _ := validateLinkShape(in, true, store.LinkRow{}); return shape },
		func(user string) (string, error) {
			if _, err := s.createLink(ctx, user, in); err != nil {
				return "", err // in.FollowerID may be nil
			}
			return "/accounts/" + strconv.FormatInt(*in.FollowerID, 10) + "?done=created", nil
		},
		func(status int, fe fieldErrs) { s.linkFormBack(w, r, status, fe, true, store.LinkRow{}) })
}

// linkEditPage serves GET /links/{id}/edit.
func (s *Server) linkEditPage(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(r)
	if !ok {
		s.refuse(w, r, http.StatusNotFound, "no such link")
		return
	}
	ctx, cancel := reqCtx(r)
	defer cancel()
	l, err := store.GetLinkRow(ctx, s.opts.Pool, id)
	if err != nil {
		st, msg := s.storeFailure(err, "link "+strconv.FormatInt(id, 10))
		s.refuse(w, r, st, msg)
		return
	}
	settings := string(l.Settings)
	var pretty strings.Builder
	var tmp any
	if json.Unmarshal(l.Settings, &tmp) == nil {
		if b, err := json.MarshalIndent(tmp, "", "  "); err == nil {
			pretty.Write(b)
			settings = pretty.String()
		}
	}
	f := linkForm{ID: l.ID, MasterID: strconv.FormatInt(l.MasterID, 10), FollowerID: strconv.FormatInt(l.FollowerID, 10),
		MasterLogin: l.MasterLogin, FollowerLogin: l.FollowerLogin, Magic: strconv.FormatInt(l.Magic, 10), Enabled: l.Enabled,
		Settings: settings, Defaults: defaultsJSON()}
	s.renderPage(w, r, http.StatusOK, "link_form", "Edit link "+strconv.FormatInt(id, 10), "links", f)
}

// linkEditSubmit serves POST /links/{id}/edit.
func (s *Server) linkEditSubmit(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(r)
	if !ok {
		s.refuse(w, r, http.StatusNotFound, "no such link")
		return
	}
	ctx, cancel := reqCtx(r)
	defer cancel()
	cur, err := store.GetLinkRow(ctx, s.opts.Pool, id)
	if err != nil {
		st, msg := s.storeFailure(err, "link "+strconv.FormatInt(id, 10))
		s.refuse(w, r, st, msg)
		return
	}
	var fe fieldErrs
	in := linkFromForm(r, &fe, false)
	formWrite(w, r, fe, func() fieldErrs { shape, _ := validateLinkShape(in, false, cur); return shape },
		func(user string) (string, error) {
			return "/accounts/" + strconv.FormatInt(cur.FollowerID, 10) + "?done=saved", s.updateLink(ctx, user, cur, in)
		},
		func(status int, fe fieldErrs) { s.linkFormBack(w, r, status, fe, false, cur) })
}
