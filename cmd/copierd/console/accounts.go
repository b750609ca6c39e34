package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/store"
)

// Accounts table paging.
const (
	defaultPageSize = 50
	maxPageSize     = 500
)

// accountsQuery is the accounts table's query string: q, role, platform, owner, status,
// enabled (true/false), problems (1), page (from 1) and size.
type accountsQuery struct {
	Q, Role, Platform, Owner, Status, Enabled string
	Problems                                  bool
	Page, Size                                int
}

// parseAccountsQuery reads and validates the table's query string.
func parseAccountsQuery(v url.Values) (accountsQuery, store.AccountQuery, error) {
	q := accountsQuery{Q: strings.TrimSpace(v.Get("q")), Role: v.Get("role"), Platform: strings.TrimSpace(v.Get("platform")),
		Owner: strings.TrimSpace(v.Get("owner")), Status: strings.TrimSpace(v.Get("status")), Enabled: v.Get("enabled"),
		Problems: v.Get("problems") == "1" || v.Get("problems") == "true", Page: 1, Size: defaultPageSize}
	sq := store.AccountQuery{Search: q.Q, Platform: q.Platform, Node: q.Owner, Status: q.Status, Problems: q.Problems}
	if len(q.Q) > 200 {
		return q, sq, errors.New("q: at most 200 characters")
	}
	for _, p := range []struct{ name, v string }{{"q", q.Q}, {"platform", q.Platform}, {"owner", q.Owner}, {"status", q.Status}} {
		if len(p.v) > 200 {
			return q, sq, errors.New(p.name + ": at most 200 characters")
		}
		if !utf8.ValidString(p.v) || strings.IndexFunc(p.v, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
			return q, sq, errors.New(p.name + ": must be text without control characters (valid UTF-8, no NUL)")
		}
	}
	switch q.Role {
	case "":
	case "master", "follower":
		sq.Role = store.Role(q.Role)
	default:
		return q, sq, errors.New("role: must be master or follower")
	}
	switch q.Enabled {
	case "":
	case "true", "false":
		b := q.Enabled == "true"
		sq.Enabled = &b
	default:
		return q, sq, errors.New("enabled: must be true or false")
	}
	if p := v.Get("page"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			return q, sq, errors.New("page: must be a positive integer")
		}
		q.Page = n
	}
	if sz := v.Get("size"); sz != "" {
		n, err := strconv.Atoi(sz)
		if err != nil || n < 1 || n > maxPageSize {
			return q, sq, fmt.Errorf("size: must be from 1 to %d", maxPageSize)
		}
		q.Size = n
	}
	if q.Page > 1_000_000 {
		return q, sq, errors.New("page: too large")
	}
	sq.Limit, sq.Offset = q.Size, (q.Page-1)*q.Size
	return q, sq, nil
}

// Self is the URL of the page shown.
func (q accountsQuery) Self() string { return q.url(q.Page) }

// url returns the URL of another page of the same query.
func (q accountsQuery) url(page int) string {
	v := url.Values{}
	for k, s := range map[string]string{"q": q.Q, "role": q.Role, "platform": q.Platform, "owner": q.Owner, "status": q.Status, "enabled": q.Enabled} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if q.Problems {
		v.Set("problems", "1")
	}
	if q.Size != defaultPageSize {
		v.Set("size", strconv.Itoa(q.Size))
	}
	if page > 1 {
		v.Set("page", strconv.Itoa(page))
	}
	if len(v) == 0 {
		return "/accounts"
	}
	return "/accounts?" + v.Encode()
}

// accountsView is the accounts page's data.
type accountsView struct {
	Query                   accountsQuery
	Error                   string
	Rows                    []accountRowView
	Total                   int
	From, To, Pages         int
	First, Prev, Next, Last string
	Platforms               []string
	NodeID                  string
}

func (s *Server) liveSnapshot() (actors.Snapshot, bool) {
	n := s.node.current()
	if n == nil {
		return actors.Snapshot{}, false
	}
	if state, _, _, _, _ := s.node.nodeState(); state == nodeStopped {
		return actors.Snapshot{}, false
	}
	return n.Snapshot(), true
}

func (s *Server) rowViews(rows []store.AccountRow) []accountRowView {
	snap, ok := s.liveSnapshot()
	idx := liveIndex(snap)
	out := make([]accountRowView, len(rows))
	for i, a := range rows {
		out[i] = accountRowView{AccountRow: a}
		if ok && a.NodeID == snap.NodeID {
			if l := idx[a.ID]; l != nil {
				out[i].Live, out[i].Here = l, true
			}
		}
	}
	return out
}

// accountsPage serves GET /accounts.
func (s *Server) accountsPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := reqCtx(r)
	defer cancel()
	q, sq, err := parseAccountsQuery(r.URL.Query())
	v := accountsView{Query: q}
	if s.opts.Node != nil {
		v.NodeID = s.node.current().Config().NodeID
	}
	status := http.StatusOK
	if err != nil {
		v.Error, status = err.Error(), http.StatusBadRequest
	} else {
		page, err := store.SearchAccounts(ctx, s.opts.Pool, sq)
		if err != nil {
			st, msg := s.storeFailure(err, "accounts")
			s.refuse(w, r, st, msg)
			return
		}
		v.Rows, v.Total = s.rowViews(page.Rows), page.Total
		v.Pages = max((page.Total+q.Size-1)/q.Size, 1)
		if len(page.Rows) > 0 {
			v.From, v.To = sq.Offset+1, sq.Offset+len(page.Rows)
		}
		if q.Page > 1 {
			v.First, v.Prev = q.url(1), q.url(min(q.Page-1, v.Pages))
		}
		if q.Page < v.Pages {
			v.Next, v.Last = q.url(q.Page+1), q.url(v.Pages)
		}
	}
	if r.Header.Get(partialHeader) == "" {
		v.Platforms, _ = store.AccountPlatforms(ctx, s.opts.Pool)
	}
	s.renderPage(w, r, status, "accounts", "Accounts", "accounts", v)
}

// accountsListJSON is GET /api/accounts.
type accountsListJSON struct {
	Total    int           `json:"total"`
	Page     int           `json:"page"`
	Size     int           `json:"size"`
	Pages    int           `json:"pages"`
	Accounts []accountJSON `json:"accounts"`
}

// apiAccounts serves GET /api/accounts.
func (s *Server) apiAccounts(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := reqCtx(r)
	defer cancel()
	q, sq, err := parseAccountsQuery(r.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	page, err := store.SearchAccounts(ctx, s.opts.Pool, sq)
	if err != nil {
		status, msg := s.storeFailure(err, "accounts")
		writeError(w, status, msg)
		return
	}
	out := accountsListJSON{Total: page.Total, Page: q.Page, Size: q.Size, Pages: max((page.Total+q.Size-1)/q.Size, 1),
		Accounts: make([]accountJSON, 0, len(page.Rows))}
	for _, v := range s.rowViews(page.Rows) {
		out.Accounts = append(out.Accounts, newAccountJSON(v.AccountRow, v.Live))
	}
	writeJSON(w, http.StatusOK, out)
}

// accountDetail is an account with its links and this node's view of it.
type accountDetail struct {
	Row       accountRowView
	Links     []linkRowView
	Journal   []journalJSON
	Quality   []qualityJSON // per link, when this process's node runs the account
	Positions positionsJSON
	NodeID    string // this process's node, "" when none
	// Protection is the follower's stop-out limits and state (followers only).
	Protection *protectionJSON
	LimitsJSON string // the follower's own limits, for the form
	// PlatformSymbols is the size of the platform's FIX symbol list, read when the account
	// has none of its own (it trades by the platform's then).
	PlatformSymbols int
}

// linkRowView is a link on a page.
type linkRowView struct {
	store.LinkRow
	Summary string // the settings in one line
}

func (s *Server) loadAccount(ctx context.Context, id int64, withPositions bool) (accountDetail, error) {
	a, err := store.GetAccountRow(ctx, s.opts.Pool, id)
	if err != nil {
		return accountDetail{}, err
	}
	links, _, err := store.FindLinks(ctx, s.opts.Pool, store.LinkQuery{AccountID: id, Limit: store.MaxPageSize})
	if err != nil {
		return accountDetail{}, err
	}
	d := accountDetail{Row: s.rowViews([]store.AccountRow{a})[0]}
	if len(a.FIX.Symbols) == 0 {
		if d.PlatformSymbols, err = store.PlatformSymbolCount(ctx, s.opts.Pool, a.Platform); err != nil {
			return accountDetail{}, err
		}
	}
	if s.opts.Node != nil {
		d.NodeID = s.node.current().Config().NodeID
	}
	for _, l := range links {
		d.Links = append(d.Links, linkRowView{LinkRow: l, Summary: settingsSummary(l.Settings)})
	}
	if d.Row.Live != nil {
		d.Journal = newJournalJSON(d.Row.Live.Journal)
		d.Quality = newQualityJSON(d.Row.Live.Quality)
	}
	if withPositions {
		d.Positions = s.loadPositions(ctx, a, links)
	}
	if a.Role == store.RoleFollower {
		p, err := s.loadProtection(ctx, id)
		if err != nil {
			return accountDetail{}, err
		}
		d.Protection = &p
		if p.Limits.Enabled() || p.Limits.KeepOnBreach {
			doc, _ := json.Marshal(p.Limits)
			d.LimitsJSON = string(doc)
		}
	}
	return d, nil
}

// accountPage serves GET /accounts/{id}.
func (s *Server) accountPage(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(r)
	if !ok {
		s.refuse(w, r, http.StatusNotFound, "no such account")
		return
	}
	ctx, cancel := reqCtx(r)
	defer cancel()
	part := r.Header.Get(partialHeader)
	d, err := s.loadAccount(ctx, id, part == "" || part == "positions")
	if err != nil {
		status, msg := s.storeFailure(err, "account "+strconv.FormatInt(id, 10))
		s.refuse(w, r, status, msg)
		return
	}
	s.renderPage(w, r, http.StatusOK, "account", "Account "+strconv.FormatInt(id, 10), "accounts", d)
}

// accountDetailJSON is GET /api/accounts/{id}.
type accountDetailJSON struct {
	Account accountJSON `json:"account"`
	Links   []linkJSON  `json:"links"`
	// Journal is the recent copy journal, newest first, when this process's node runs the
	// account (null otherwise).
	Journal []journalJSON `json:"journal"`
	// Quality is each link's copy quality over its recent copies, when this process's node
	// runs the account (null otherwise).
	Quality []qualityJSON `json:"quality"`
}

// apiAccount serves GET /api/accounts/{id}.
func (s *Server) apiAccount(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(r)
	if !ok {
		writeError(w, http.StatusBadRequest, "account id must be a positive integer")
		return
	}
	ctx, cancel := reqCtx(r)
	defer cancel()
	d, err := s.loadAccount(ctx, id, false)
	if err != nil {
		status, msg := s.storeFailure(err, "account "+strconv.FormatInt(id, 10))
		writeError(w, status, msg)
		return
	}
	writeJSON(w, http.StatusOK, s.detailJSON(d))
}

func (s *Server) detailJSON(d accountDetail) accountDetailJSON {
	out := accountDetailJSON{Account: newAccountJSON(d.Row.AccountRow, d.Row.Live), Links: make([]linkJSON, 0, len(d.Links)), Journal: d.Journal, Quality: d.Quality}
	for _, l := range d.Links {
		out.Links = append(out.Links, newLinkJSON(l.LinkRow))
	}
	return out
}

// journalResponse is GET /api/accounts/{id}/journal.
type journalResponse struct {
	AccountID int64 `json:"account_id"`
	// OwnedHere is true when this process's node runs the account; the journal lives in
	// the node's memory, so only the owner has it.
	OwnedHere bool          `json:"owned_here"`
	Owner     *string       `json:"owner"`
	Journal   []journalJSON `json:"journal"`
}

// apiAccountJournal serves GET /api/accounts/{id}/journal.
func (s *Server) apiAccountJournal(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(r)
	if !ok {
		writeError(w, http.StatusBadRequest, "account id must be a positive integer")
		return
	}
	ctx, cancel := reqCtx(r)
	defer cancel()
	a, err := store.GetAccountRow(ctx, s.opts.Pool, id)
	if err != nil {
		status, msg := s.storeFailure(err, "account "+strconv.FormatInt(id, 10))
		writeError(w, status, msg)
		return
	}
	v := s.rowViews([]store.AccountRow{a})[0]
	out := journalResponse{AccountID: id, OwnedHere: v.Here, Journal: []journalJSON{}}
	if a.NodeID != "" {
		out.Owner = &a.NodeID
	}
	if v.Live != nil {
		out.Journal = newJournalJSON(v.Live.Journal)
	}
	writeJSON(w, http.StatusOK, out)
}

// createAccount validates and inserts an account for user; on refusal (an *opError)
// nothing is written.
func (s *Server) createAccount(ctx context.Context, user string, in *accountInput) (int64, error) {
	fe := s.validateAccount(in, true, 0)
	if fe.any() {
		return 0, refused(refusedInvalid, fe)
	}
	sealed, err := s.sealPassword(in)
	if err != nil {
		s.log.Error().Err(err).Msg("console: sealing a password failed")
		fe.add("password", "could not be sealed (logged)")
		return 0, refused(refusedInternal, fe)
	}
	a := store.Account{ID: *in.ID, Platform: *in.Platform, Role: store.Role(*in.Role), Enabled: in.Enabled == nil || *in.Enabled,
		Login: *in.Login, Credentials: sealed}
	if in.Server != nil {
		a.Server = *in.Server
	}
	if in.CloseOnly != nil {
		a.CloseOnly = *in.CloseOnly
	}
	if in.FIX != nil {
		a.FIX = *in.FIX
	}
	if err := store.CreateAccount(ctx, s.opts.Pool, a); err != nil {
		if fe, ok := accountConflict(err, a.ID); ok {
			return 0, refused(refusedConflict, fe)
		}
		return 0, s.storeRefused(err, "account", "id")
	}
	s.log.Info().Str("user", user).Int64("account", a.ID).Str("role", string(a.Role)).Str("platform", a.Platform).
		Bool("credentials", len(sealed) > 0).Msg("console: account created")
	return a.ID, nil
}

// updateAccount validates and applies user's edit of account id; on refusal (an
// *opError) nothing is written.
func (s *Server) updateAccount(ctx context.Context, user string, id int64, in *accountInput) error {
	fe := s.validateAccount(in, false, id)
	if fe.any() {
		return refused(refusedInvalid, fe)
	}
	if in.CloseOnly != nil && *in.CloseOnly != "" && in.Role == nil {
		if cur, err := store.GetAccountRow(ctx, s.opts.Pool, id); err == nil && cur.Role == store.RoleMaster {
			fe.add("close_only", "applies to followers only")
			return refused(refusedInvalid, fe)
		}
	}
	sealed, err := s.sealPassword(in)
	if err != nil {
		s.log.Error().Err(err).Msg("console: sealing a password failed")
		fe.add("password", "could not be sealed (logged)")
		return refused(refusedInternal, fe)
	}
	u := store.AccountUpdate{ID: id, Platform: in.Platform, Enabled: in.Enabled, Login: in.Login, Server: in.Server,
		SetCredentials: in.ClearPassword || len(sealed) > 0, Credentials: sealed, CloseOnly: in.CloseOnly, FIX: in.FIX}
	if in.Role != nil {
		role := store.Role(*in.Role)
		u.Role = &role
	}
	if err := store.UpdateAccount(ctx, s.opts.Pool, u); err != nil {
		switch {
		case errors.Is(err, store.ErrRoleInUse):
			fe.add("role", strings.TrimPrefix(err.Error(), store.ErrRoleInUse.Error()+": ")+": its links need its current role")
			return refused(refusedConflict, fe)
		case errors.Is(err, store.ErrNotFound):
			fe.add("id", "account not found")
			return refused(refusedNotFound, fe)
		}
		if cf, ok := accountConflict(err, id); ok {
			return refused(refusedConflict, cf)
		}
		return s.storeRefused(err, "account", "id")
	}
	ev := s.log.Info().Str("user", user).Int64("account", id)
	if in.ClearPassword {
		ev = ev.Str("credentials", "cleared")
	} else if len(sealed) > 0 {
		ev = ev.Str("credentials", "replaced")
	}
	ev.Msg("console: account updated")
	return nil
}

// apiAccountCreate serves POST /api/accounts.
func (s *Server) apiAccountCreate(w http.ResponseWriter, r *http.Request) {
	apiWrite(w, r, http.StatusCreated, s.createAccount, s.writeAccount)
}

// apiAccountUpdate serves PATCH /api/accounts/{id}.
func (s *Server) apiAccountUpdate(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(r)
	if !ok {
		writeError(w, http.StatusBadRequest, "account id must be a positive integer")
		return
	}
	apiWrite(w, r, http.StatusOK, func(ctx context.Context, user string, in *accountInput) (int64, error) {
		return id, s.updateAccount(ctx, user, id, in)
	}, s.writeAccount)
}

// writeAccount answers with an account's current row.
func (s *Server) writeAccount(ctx context.Context, w http.ResponseWriter, id int64, status int) {
	a, err := store.GetAccountRow(ctx, s.opts.Pool, id)
	if err != nil {
		st, msg := s.storeFailure(err, "account")
		writeError(w, st, msg)
		return
	}
	v := s.rowViews([]store.AccountRow{a})[0]
	if status == http.StatusCreated {
		w.Header().Set("Location", "/api/accounts/"+strconv.FormatInt(id, 10))
	}
	writeJSON(w, status, newAccountJSON(a, v.Live))
}

// accountForm is the account form's data.
type accountForm struct {
	Create         bool
	ID             string
	Role           string
	Platform       string
	Login          string
	Server         string
	Enabled        bool
	HasCredentials bool
	CanSeal        bool
	CloseOnly      string
	FIX            store.FIXSession
	SymbolsText    string // the FIX symbol list as the form's text
	Errors         map[string]string
	Platforms      []string
}

// accountNewPage serves GET /accounts/new.
func (s *Server) accountNewPage(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := reqCtx(r)
	defer cancel()
	f := accountForm{Create: true, Enabled: true, Role: r.URL.Query().Get("role"), CanSeal: s.opts.Sealer != nil}
	f.Platforms, _ = store.AccountPlatforms(ctx, s.opts.Pool)
	s.renderPage(w, r, http.StatusOK, "account_form", "New account", "accounts", f)
}

// accountFromForm reads the account form. The password is taken only when typed.
func accountFromForm(r *http.Request, fe *fieldErrs, create bool) *accountInput {
	in := &accountInput{Role: formStr(r, "role"), Platform: formStr(r, "platform"), Login: formStr(r, "login"), Server: formStr(r, "server"),
		CloseOnly: formStr(r, "close_only"), FIX: &store.FIXSession{SenderCompID: r.PostFormValue("fix_sender_comp_id"),
			SenderSubID: r.PostFormValue("fix_sender_sub_id"), TargetCompID: r.PostFormValue("fix_target_comp_id"),
			TargetSubID: r.PostFormValue("fix_target_sub_id"), Username: r.PostFormValue("fix_username"),
			Dialect: r.PostFormValue("fix_dialect"), PositionMode: r.PostFormValue("fix_position_mode"),
			Symbols: parseSymbolLines(fe, "fix.symbols", r.PostFormValue("fix_symbols"))}}
	on := formChecked(r, "enabled")
	in.Enabled = &on
	if create {
		in.ID = formInt(fe, "id", r.PostFormValue("id"))
	}
	if pw := r.PostFormValue("password"); pw != "" {
		in.Password = &pw
	}
	in.ClearPassword = r.PostFormValue("clear_password") == "on"
	return in
}

// accountFormBack re-renders an account form after an error; it never echoes the password.
func (s *Server) accountFormBack(ctx context.Context, w http.ResponseWriter, r *http.Request, status int, in *accountInput, fe fieldErrs, create bool, hasCreds bool, id int64) {
	f := accountForm{Create: create, Role: deref(in.Role), Platform: deref(in.Platform), Login: deref(in.Login), Server: deref(in.Server),
		Enabled: in.Enabled != nil && *in.Enabled, HasCredentials: hasCreds, CanSeal: s.opts.Sealer != nil, CloseOnly: deref(in.CloseOnly), Errors: fe.m}
	if in.FIX != nil {
		f.FIX = *in.FIX
	}
	f.SymbolsText = r.PostFormValue("fix_symbols") // as typed, even when it did not parse
	if create {
		f.ID = strings.TrimSpace(r.PostFormValue("id"))
	} else {
		f.ID = strconv.FormatInt(id, 10)
	}
	f.Platforms, _ = store.AccountPlatforms(ctx, s.opts.Pool)
	title := "New account"
	if !create {
		title = "Edit account " + f.ID
	}
	s.renderPage(w, r, status, "account_form", title, "accounts", f)
}

// accountNewSubmit serves POST /accounts/new.
func (s *Server) accountNewSubmit(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := reqCtx(r)
	defer cancel()
	var fe fieldErrs
	in := accountFromForm(r, &fe, true)
	formWrite(w, r, fe, func() fieldErrs { return s.validateAccount(in, true, 0) },
		func(user string) (string, error) {
			id, err := s.createAccount(ctx, user, in)
			return "/accounts/" + strconv.FormatInt(id, 10) + "?done=created", err
		},
		func(status int, fe fieldErrs) { s.accountFormBack(ctx, w, r, status, in, fe, true, false, 0) })
}

// accountEditPage serves GET /accounts/{id}/edit.
func (s *Server) accountEditPage(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(r)
	if !ok {
		s.refuse(w, r, http.StatusNotFound, "no such account")
		return
	}
	ctx, cancel := reqCtx(r)
	defer cancel()
	a, err := store.GetAccountRow(ctx, s.opts.Pool, id)
	if err != nil {
		status, msg := s.storeFailure(err, "account "+strconv.FormatInt(id, 10))
		s.refuse(w, r, status, msg)
		return
	}
	f := accountForm{ID: strconv.FormatInt(id, 10), Role: string(a.Role), Platform: a.Platform, Login: a.Login, Server: a.Server,
		Enabled: a.Enabled, HasCredentials: a.HasCredentials, CanSeal: s.opts.Sealer != nil, CloseOnly: a.CloseOnly, FIX: a.FIX, SymbolsText: symbolLines(a.FIX.Symbols)}
	f.Platforms, _ = store.AccountPlatforms(ctx, s.opts.Pool)
	s.renderPage(w, r, http.StatusOK, "account_form", "Edit account "+f.ID, "accounts", f)
}

// accountEditSubmit serves POST /accounts/{id}/edit.
func (s *Server) accountEditSubmit(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(r)
	if !ok {
		s.refuse(w, r, http.StatusNotFound, "no such account")
		return
	}
	ctx, cancel := reqCtx(r)
	defer cancel()
	a, err := store.GetAccountRow(ctx, s.opts.Pool, id)
	if err != nil {
		status, msg := s.storeFailure(err, "account "+strconv.FormatInt(id, 10))
		s.refuse(w, r, status, msg)
		return
	}
	var fe fieldErrs
	in := accountFromForm(r, &fe, false)
	formWrite(w, r, fe, func() fieldErrs { return s.validateAccount(in, false, id) },
		func(user string) (string, error) {
			return "/accounts/" + strconv.FormatInt(id, 10) + "?done=saved", s.updateAccount(ctx, user, id, in)
		},
		func(status int, fe fieldErrs) {
			s.accountFormBack(ctx, w, r, status, in, fe, false, a.HasCredentials, id)
		})
}
