package console

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/snapcopier/copier/internal/strictjson"
	"github.com/snapcopier/copier/store"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// partialHeader asks for one live fragment of a page instead of the whole page; the
// page scripts send it when they refresh a region.
const partialHeader = "X-Copier-Partial"

var partialName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,30}$`)

// pageNames are the templates of templates/<name>.html, each rendered inside layout.html.
var pageNames = []string{"cluster", "accounts", "account", "account_form", "links", "link_form", "platforms", "platform_symbols", "login", "error"}

// loadTemplates parses the layout with each page.
func loadTemplates() (map[string]*template.Template, error) {
	base, err := template.New("layout.html").Funcs(templateFuncs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, err
	}
	pages := make(map[string]*template.Template, len(pageNames))
	for _, name := range pageNames {
		t, err := template.Must(base.Clone()).ParseFS(templateFS, "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// templateFuncs are the formatting helpers of the templates.
var templateFuncs = template.FuncMap{
	"symbolLines": symbolLines,
	"ts":          fmtTime,
	"ago":         fmtAgo,
	"dur":         fmtDur,
	"secs":        secsText,
	"money":       fmtMoney,
	"num":         func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) },
	"price":       fmtPrice,
	"add":         func(a, b int) int { return a + b },
	"list":        func(xs ...any) []any { return xs },
	"nonzero":     func(t time.Time) bool { return !t.IsZero() },
	"deref":       func(p *float64) float64 { return *p },
	"pct": func(a, b int) int {
		if b == 0 {
			return 0
		}
		return a * 100 / b
	},
}

// secsText is a duration in seconds with one decimal, for countdowns.
func secsText(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) }

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func fmtAgo(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	d := time.Since(t)
	if d < 0 {
		return "in " + fmtDur(-d)
	}
	return fmtDur(d) + " ago"
}

func fmtDur(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < time.Millisecond:
		return strconv.FormatInt(d.Microseconds(), 10) + " µs"
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return strconv.Itoa(int(d.Hours()/24)) + " d"
}

// fmtMoney formats an amount with two decimals and thousands separators.
func fmtMoney(f *float64) string {
	if f == nil || math.IsNaN(*f) || math.IsInf(*f, 0) {
		return "—"
	}
	s := strconv.FormatFloat(math.Abs(*f), 'f', 2, 64)
	intPart, frac := s[:len(s)-3], s[len(s)-3:]
	var b strings.Builder
	if *f < 0 && *f <= -0.005 {
		b.WriteByte('-')
	}
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String() + frac
}

func fmtPrice(f float64) string {
	if f == 0 {
		return "—"
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// page is what every page template gets.
type page struct {
	Title   string
	Nav     string
	User    principal
	Mutable bool   // the principal may change things
	Notice  string // a one-line confirmation ("Saved.")
	Body    any
}

// notices maps the done= query parameter of a redirect to its message (never reflected).
var notices = map[string]string{
	"created":  "Created.",
	"saved":    "Saved.",
	"enabled":  "Enabled.",
	"disabled": "Disabled. Its owner releases it in its next lease cycle.",
	"paused":   "This node stopped claiming new accounts.",
	"resumed":  "This node claims accounts again.",
	"drained":  "This node released its accounts and stopped.",
}

// renderPage renders a page, or only the fragment the partial header asks for.
func (s *Server) renderPage(w http.ResponseWriter, r *http.Request, status int, name, title, nav string, body any) {
	t := s.pages[name]
	p := page{Title: title, Nav: nav, User: principalOf(r), Body: body, Notice: notices[r.URL.Query().Get("done")]}
	p.Mutable = p.User.CanMutate
	tmpl := "layout.html"
	if part := r.Header.Get(partialHeader); part != "" {
		if !partialName.MatchString(part) || t.Lookup("live-"+part) == nil {
			writeError(w, http.StatusBadRequest, "this page has no live part "+strconv.Quote(part))
			return
		}
		tmpl = "live-" + part
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, tmpl, p); err != nil {
		s.log.Error().Err(err).Str("page", name).Msg("console template failed")
		http.Error(w, "internal error rendering the page (logged)", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// refuse answers an error: JSON for the API and fragments, an HTML page otherwise.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if isAPI(r) {
		writeError(w, status, msg)
		return
	}
	s.renderPage(w, r, status, "error", http.StatusText(status), "", struct {
		Status  int
		Message string
	}{status, msg})
}

// apiError is the body of every API error.
type apiError struct {
	Error string `json:"error"`
	// Fields maps an input field to what is wrong with it.
	Fields map[string]string `json:"fields,omitempty"`
	// SettingsErrors lists every problem of a link's settings, by JSON path.
	SettingsErrors []settingsProblem `json:"settings_errors,omitempty"`
}

// settingsProblem is one invalid field of a link's settings.
type settingsProblem struct {
	Field   string `json:"field"`
	Problem string `json:"problem"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, apiError{Error: msg})
}

// ctx bounds a request's work.
func reqCtx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), requestTimeout)
}

// pathID parses the {id} path value.
func pathID(r *http.Request) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	return id, err == nil && id > 0
}

// storeFailure maps a store error to a status and a message that is safe to show, and
// logs the unexpected ones.
func (s *Server) storeFailure(err error, what string) (int, string) {
	k, msg := s.storeRefusal(err, what)
	return k.status(), msg
}

// storeRefusal classifies a store error and words it safely; it logs the unexpected ones.
func (s *Server) storeRefusal(err error, what string) (refusal, string) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return refusedNotFound, what + " not found"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		s.log.Warn().Err(err).Str("what", what).Msg("console request timed out")
		return refusedUnavailable, "the database did not answer in time; try again"
	}
	s.log.Error().Err(err).Str("what", what).Msg("console database error")
	return refusedInternal, "database error while reading or writing " + what + " (logged)"
}

// decodeJSON reads a JSON body into v as API.md says: one object, keys spelled exactly
// as documented, no unknown or repeated key, nothing after it (internal/strictjson). The
// error names the field and never quotes values (they may be secrets).
func decodeJSON(r *http.Request, v any) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return fmt.Errorf("body larger than %d bytes", mbe.Limit)
		}
		return errors.New("cannot read the body")
	}
	return decodeBody(body, v)
}

// decodeBody is decodeJSON on bytes already read.
func decodeBody(body []byte, v any) error {
	err := strictjson.Decode(body, v)
	if err == nil {
		return nil
	}
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	var fe *strictjson.FieldError
	switch {
	case errors.As(err, &fe):
		return fmt.Errorf("%s %q (field names are case-sensitive; see API.md)", fe.Err, fe.Path)
	case errors.Is(err, strictjson.ErrEmpty):
		return errors.New("empty body: want a JSON object")
	case errors.Is(err, strictjson.ErrNotObject):
		return errors.New("want a JSON object")
	case errors.Is(err, strictjson.ErrTrailingData):
		return errors.New("trailing data after the JSON object")
	case errors.Is(err, strictjson.ErrInvalidUTF8):
		return errors.New("the body is not valid UTF-8")
	case errors.As(err, &te):
		if te.Field == "" {
			return errors.New("want a JSON object")
		}
		return fmt.Errorf("field %q: want a %s", te.Field, jsonKind(te.Type.Kind().String()))
	case errors.As(err, &se):
		return fmt.Errorf("malformed JSON at byte %d", se.Offset)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return fmt.Errorf("unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return errors.New("malformed JSON body")
}

// decodeNoBody reads the body of an action that takes no input: it must be empty or the
// empty object {}; anything else is refused (400) before the action runs.
func decodeNoBody(r *http.Request) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return errors.New("cannot read the body")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if err := decodeBody(body, &struct{}{}); err != nil {
		return fmt.Errorf("%v: this call takes no input (send no body or {})", err)
	}
	return nil
}

func jsonKind(k string) string {
	switch {
	case strings.HasPrefix(k, "int"), strings.HasPrefix(k, "uint"), strings.HasPrefix(k, "float"):
		return "number"
	case k == "bool":
		return "boolean (true or false)"
	case k == "string":
		return "string"
	case k == "map", k == "struct":
		return "JSON object"
	}
	return k
}
