package console

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/snapcopier/copier/store"
)

// A platform's FIX symbol list (store.PlatformSymbols): the list of the platform's accounts
// without one of their own, for a venue without SecurityList (the fix44 dialect). Edited
// like an account's list — the same text format in the form, the same JSON entries and the
// same checks (fix.CheckSymbols) in the API — and read by a node with each account's
// configuration when it connects the account's session, so a change reaches an account
// when its session is next made (store/platforms.go says when).

// platformSymbolsJSON is GET and PUT /api/platforms/{platform}/fix-symbols.
type platformSymbolsJSON struct {
	Platform string            `json:"platform"`
	Symbols  []store.FIXSymbol `json:"symbols"` // [] when the platform has none
}

// platformSymbolsInput is the body of PUT /api/platforms/{platform}/fix-symbols: the new
// list; [] (or no "symbols") removes it.
type platformSymbolsInput struct {
	Symbols []store.FIXSymbol `json:"symbols"`
}

// pathPlatform reads the {platform} of a path: a platform name as accounts have them.
func pathPlatform(r *http.Request) (string, bool) {
	p := r.PathValue("platform")
	return p, platformRE.MatchString(p)
}

const badPlatform = "platform must be letters, digits, '.', '_' and '-' (at most 32, e.g. mt5, fix)"

// setPlatformSymbols validates and stores a platform's list. Its problems are field errors
// on field (422); nothing is stored then.
func (s *Server) setPlatformSymbols(ctx context.Context, r *http.Request, platform, field string, list []store.FIXSymbol) (fieldErrs, error) {
	var fe fieldErrs
	checkSymbolList(&fe, field, list)
	if fe.any() {
		return fe, nil
	}
	if err := store.SetPlatformSymbols(ctx, s.opts.Pool, platform, list); err != nil {
		return fe, err
	}
	s.log.Info().Str("user", principalOf(r).Name).Str("platform", platform).Int("symbols", len(list)).Msg("console: platform FIX symbols set")
	return fe, nil
}

// apiPlatformSymbols serves GET /api/platforms/{platform}/fix-symbols.
func (s *Server) apiPlatformSymbols(w http.ResponseWriter, r *http.Request) {
	p, ok := pathPlatform(r)
	if !ok {
		writeError(w, http.StatusBadRequest, badPlatform)
		return
	}
	ctx, cancel := reqCtx(r)
	defer cancel()
	s.writePlatformSymbols(ctx, w, p)
}

func (s *Server) writePlatformSymbols(ctx context.Context, w http.ResponseWriter, p string) {
	list, err := store.PlatformSymbols(ctx, s.opts.Pool, p)
	if err != nil {
		status, msg := s.storeFailure(err, "platform "+p)
		writeError(w, status, msg)
		return
	}
	writeJSON(w, http.StatusOK, platformSymbolsJSON{Platform: p, Symbols: append([]store.FIXSymbol{}, list...)})
}

// apiPlatformSymbolsSet serves PUT /api/platforms/{platform}/fix-symbols.
func (s *Server) apiPlatformSymbolsSet(w http.ResponseWriter, r *http.Request) {
	p, ok := pathPlatform(r)
	if !ok {
		writeError(w, http.StatusBadRequest, badPlatform)
		return
	}
	var in platformSymbolsInput
	if err := decodeJSON(r, &in); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := reqCtx(r)
	defer cancel()
	fe, err := s.setPlatformSymbols(ctx, r, p, "symbols", in.Symbols)
	if err != nil {
		status, msg := s.storeFailure(err, "platform "+p)
		writeError(w, status, msg)
		return
	}
	if fe.any() {
		writeJSON(w, http.StatusUnprocessableEntity, fe.apiError())
		return
	}
	s.writePlatformSymbols(ctx, w, p)
}

// platformRow is one platform of the platforms page.
type platformRow struct {
	Name    string
	Symbols int // symbols in its list; 0: none (the node's)
}

// platformsPage serves GET /platforms: the platforms the accounts name and those with a
// symbol list. ?platform=NAME opens that platform's list (one no account names yet).
func (s *Server) platformsPage(w http.ResponseWriter, r *http.Request) {
	if p := strings.TrimSpace(r.URL.Query().Get("platform")); p != "" {
		if !platformRE.MatchString(p) {
			s.refuse(w, r, http.StatusBadRequest, badPlatform)
			return
		}
		http.Redirect(w, r, "/platforms/"+url.PathEscape(p)+"/fix-symbols", http.StatusSeeOther)
		return
	}
	ctx, cancel := reqCtx(r)
	defer cancel()
	names, err := store.AccountPlatforms(ctx, s.opts.Pool)
	var counts map[string]int
	if err == nil {
		counts, err = store.PlatformSymbolCounts(ctx, s.opts.Pool)
	}
	if err != nil {
		status, msg := s.storeFailure(err, "platforms")
		s.refuse(w, r, status, msg)
		return
	}
	for p := range counts {
		if !slices.Contains(names, p) {
			names = append(names, p)
		}
	}
	slices.Sort(names)
	rows := make([]platformRow, len(names))
	for i, p := range names {
		rows[i] = platformRow{Name: p, Symbols: counts[p]}
	}
	s.renderPage(w, r, http.StatusOK, "platforms", "Platforms", "platforms", rows)
}

// platformSymbolsForm is the platform symbol list form's data.
type platformSymbolsForm struct {
	Platform    string
	SymbolsText string
	Errors      map[string]string
}

// platformSymbolsPage serves GET /platforms/{platform}/fix-symbols.
func (s *Server) platformSymbolsPage(w http.ResponseWriter, r *http.Request) {
	p, ok := pathPlatform(r)
	if !ok {
		s.refuse(w, r, http.StatusNotFound, badPlatform)
		return
	}
	ctx, cancel := reqCtx(r)
	defer cancel()
	list, err := store.PlatformSymbols(ctx, s.opts.Pool, p)
	if err != nil {
		status, msg := s.storeFailure(err, "platform "+p)
		s.refuse(w, r, status, msg)
		return
	}
	s.renderPage(w, r, http.StatusOK, "platform_symbols", "FIX symbols of platform "+p, "platforms",
		platformSymbolsForm{Platform: p, SymbolsText: symbolLines(list)})
}

// platformSymbolsSubmit serves POST /platforms/{platform}/fix-symbols: the list in the
// account form's text format; an empty text removes it.
func (s *Server) platformSymbolsSubmit(w http.ResponseWriter, r *http.Request) {
	p, ok := pathPlatform(r)
	if !ok {
		s.refuse(w, r, http.StatusNotFound, badPlatform)
		return
	}
	ctx, cancel := reqCtx(r)
	defer cancel()
	text := r.PostFormValue("fix_symbols")
	var fe fieldErrs
	list := parseSymbolLines(&fe, "symbols", text)
	if !fe.any() {
		var err error
		if fe, err = s.setPlatformSymbols(ctx, r, p, "symbols", list); err != nil {
			status, msg := s.storeFailure(err, "platform "+p)
			s.refuse(w, r, status, msg)
			return
		}
	}
	if fe.any() {
		s.renderPage(w, r, http.StatusUnprocessableEntity, "platform_symbols", "FIX symbols of platform "+p, "platforms",
			platformSymbolsForm{Platform: p, SymbolsText: text, Errors: fe.m})
		return
	}
	http.Redirect(w, r, withDone("/platforms/"+url.PathEscape(p)+"/fix-symbols", "saved"), http.StatusSeeOther)
}
