package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snapcopier/copier/internal/connauth"
	"github.com/snapcopier/copier/internal/netsource"
	"github.com/snapcopier/copier/store"
)

// Session cookie settings.
const (
	sessionCookie = "copier_session"
	sessionTTL    = 12 * time.Hour
	// maxBody bounds every request body (forms and JSON).
	maxBody = 1 << 20
)

// Login throttling: at most loginFailures failed password or token attempts per client
// source (throttleKey) per loginWindow; further attempts from that source get 429 until
// it passes, the right credentials included (else the guesser would learn its hit).
const (
	loginFailures = 10
	loginWindow   = time.Minute
)

// principal is who made a request.
type principal struct {
	Name      string // shown in the page header and logged with every mutation
	Method    string // "bearer", "basic", "session" or "local"
	CanMutate bool
	CSRF      string // form token bound to this principal
}

type principalKey struct{}

// principalOf returns the request's principal (set by the middleware).
func principalOf(r *http.Request) principal {
	p, _ := r.Context().Value(principalKey{}).(principal)
	return p
}

// authenticator checks credentials. Secrets are compared as SHA-256 digests in constant
// time, so neither their content nor their length leaks through timing.
type authenticator struct {
	hasToken, hasBasic bool
	token              [32]byte
	user, password     [32]byte
	userName           string
	key                []byte // HMAC key of session cookies and form tokens
	now                func() time.Time
	limiter            *failLimiter
	// pool holds the revoked sessions (console_revoked_sessions), shared by every
	// process that serves the console; revoked caches the ones this process has seen.
	pool    *pgxpool.Pool
	revoked sync.Map // session id → struct{}
	// trusted are the reverse proxies whose X-Forwarded-Proto is believed.
	trusted []netip.Prefix
}

func newAuthenticator(o Options) *authenticator {
	a := &authenticator{hasToken: o.Token != "", hasBasic: o.User != "", userName: o.User, now: time.Now, limiter: newFailLimiter(),
		pool: o.Pool, trusted: o.TrustedProxies}
	a.token = sha256.Sum256([]byte(o.Token))
	a.user = sha256.Sum256([]byte(o.User))
	a.password = sha256.Sum256([]byte(o.Password))
	// Derived from the credentials: sessions survive a restart and work across replicas,
	// and changing the credentials ends every session.
	k := sha256.Sum256([]byte("copier console session v1\x00" + o.Token + "\x00" + o.User + "\x00" + o.Password))
	a.key = k[:]
	return a
}

func (a *authenticator) protected() bool { return a.hasToken || a.hasBasic }

func equalDigest(want [32]byte, got string) bool {
	g := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(want[:], g[:]) == 1
}

func (a *authenticator) tokenOK(t string) bool { return a.hasToken && equalDigest(a.token, t) }

func (a *authenticator) basicOK(user, pw string) bool {
	// Both comparisons always run.
	u, p := equalDigest(a.user, user), equalDigest(a.password, pw)
	return a.hasBasic && u && p
}

func (a *authenticator) mac(parts ...string) string {
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte(strings.Join(parts, "\x00")))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// newSession returns a signed session cookie value: v1.<expiry>.<nonce>.<mac>.
func (a *authenticator) newSession(who string) string {
	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	payload := "v1." + strconv.FormatInt(a.now().Add(sessionTTL).Unix(), 10) + "." +
		base64.RawURLEncoding.EncodeToString(nonce[:]) + "." + base64.RawURLEncoding.EncodeToString([]byte(who))
	return payload + "." + a.mac("session", payload)
}

// session is a verified session cookie.
type session struct {
	payload, who, id string
	expires          time.Time
}

// checkSession verifies a cookie value's signature and expiry (not its revocation).
func (a *authenticator) checkSession(v string) (session, bool) {
	i := strings.LastIndexByte(v, '.')
	if i < 0 {
		return session{}, false
	}
	payload, sig := v[:i], v[i+1:]
	if !hmac.Equal([]byte(sig), []byte(a.mac("session", payload))) {
		return session{}, false
	}
	f := strings.Split(payload, ".")
	if len(f) != 4 || f[0] != "v1" {
		return session{}, false
	}
	exp, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil || a.now().Unix() >= exp {
		return session{}, false
	}
	name, err := base64.RawURLEncoding.DecodeString(f[3])
	if err != nil {
		return session{}, false
	}
	return session{payload: payload, who: string(name), id: f[2], expires: time.Unix(exp, 0)}, true
}

// isRevoked reports whether a session was ended by a logout (here or on another process).
func (a *authenticator) isRevoked(ctx context.Context, id string) (bool, error) {
	if _, ok := a.revoked.Load(id); ok {
		return true, nil
	}
	if a.pool == nil {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	revoked, err := store.SessionRevoked(ctx, a.pool, id)
	if revoked {
		a.revoked.Store(id, struct{}{})
	}
	return revoked, err
}

// revoke ends a session on every process that serves the console.
func (a *authenticator) revoke(ctx context.Context, sess session) error {
	a.revoked.Store(sess.id, struct{}{})
	if a.pool == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	return store.RevokeSession(ctx, a.pool, sess.id, sess.expires)
}

// authenticate returns the request's principal, or a message saying why not.
func (a *authenticator) authenticate(r *http.Request) (principal, string, bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, cred, _ := strings.Cut(h, " ")
		switch strings.ToLower(scheme) {
		case "bearer":
			if a.tokenOK(strings.TrimSpace(cred)) {
				return principal{Name: "token", Method: "bearer", CanMutate: true, CSRF: a.mac("csrf", "bearer")}, "", true
			}
			return principal{}, "invalid bearer token", false
		case "basic":
			user, pw, ok := r.BasicAuth()
			if ok && a.basicOK(user, pw) {
				return principal{Name: user, Method: "basic", CanMutate: true, CSRF: a.mac("csrf", "basic", user)}, "", true
			}
			return principal{}, "invalid user name or password", false
		}
		return principal{}, "unsupported Authorization scheme (use Bearer or Basic)", false
	}
	if c, err := r.Cookie(sessionCookie); err == nil {
		sess, ok := a.checkSession(c.Value)
		if !ok {
			return principal{}, "session expired or invalid: log in again", false
		}
		revoked, err := a.isRevoked(r.Context(), sess.id)
		switch {
		case err != nil:
			return principal{}, "the session cannot be checked now (the database did not answer): try again", false
		case revoked:
			return principal{}, "you logged out of this session: log in again", false
		}
		return principal{Name: sess.who, Method: "session", CanMutate: true, CSRF: a.mac("csrf", "session", sess.payload)}, "", true
	}
	return principal{}, "authentication required", false
}

// isMutation reports whether a request may change state (every method but GET, HEAD and
// OPTIONS).
func isMutation(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// isAPI reports whether a request is for the JSON API or a page fragment (answered with
// status codes, never redirects or challenges a browser would show).
func isAPI(r *http.Request) bool {
	return strings.HasPrefix(r.URL.Path, "/api/") || r.Header.Get(partialHeader) != ""
}

// loopbackRequest reports whether a request comes from a loopback address and names a
// loopback host (a page of another site cannot reach it by DNS rebinding).
func loopbackRequest(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return false
	}
	h := r.Host
	if hh, _, err := net.SplitHostPort(h); err == nil {
		h = hh
	}
	return isLoopbackHost(h)
}

// middleware authenticates every request except static assets and the login page, and
// applies the CSRF rules to mutations.
func (a *authenticator) middleware(s *Server, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/static/") {
			next.ServeHTTP(w, r)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		if !a.protected() {
			if !loopbackRequest(r) {
				s.refuse(w, r, http.StatusForbidden, "this console has no credentials configured, so it answers only loopback requests "+
					"to http://127.0.0.1:PORT or http://localhost:PORT; set "+EnvToken+", or "+EnvUser+" and "+EnvPassword)
				return
			}
			if r.URL.Path == "/login" {
				http.Redirect(w, r, "/", http.StatusSeeOther)
				return
			}
			if isMutation(r) {
				s.refuse(w, r, http.StatusForbidden, "read-only console: changes need credentials; restart with "+EnvToken+
					", or "+EnvUser+" and "+EnvPassword+" set")
				return
			}
			next.ServeHTTP(w, withPrincipal(r, principal{Name: "local (read-only)", Method: "local"}))
			return
		}
		if r.URL.Path == "/login" {
			next.ServeHTTP(w, r)
			return
		}
		// Password and token guesses are throttled per client address like the login form.
		guess := r.Header.Get("Authorization") != ""
		if guess && !a.limiter.allow(a.throttleKey(r)) {
			s.refuse(w, r, http.StatusTooManyRequests, "too many failed logins from this address; try again in a minute")
			return
		}
		p, why, ok := a.authenticate(r)
		if !ok {
			if guess {
				a.limiter.fail(a.throttleKey(r))
			}
			s.unauthenticated(w, r, why)
			return
		}
		// The connection has an operator on it: the server's anonymous limits (a short
		// header timeout) no longer apply to it.
		connauth.Authenticated(r.Context())
		if isMutation(r) {
			if msg, status := a.checkMutation(r, p); msg != "" {
				s.refuse(w, r, status, msg)
				return
			}
		}
		next.ServeHTTP(w, withPrincipal(r, p))
	})
}

// checkMutation applies the CSRF rules: API mutations must be JSON; form posts must carry
// the principal's form token.
func (a *authenticator) checkMutation(r *http.Request, p principal) (string, int) {
	if strings.HasPrefix(r.URL.Path, "/api/") {
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/json" {
			return "API changes must be sent as JSON: set Content-Type: application/json (an empty body is fine where none is needed)", http.StatusUnsupportedMediaType
		}
		return "", 0
	}
	if err := r.ParseForm(); err != nil {
		return "cannot read the form: " + err.Error(), http.StatusBadRequest
	}
	if subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(p.CSRF)) != 1 {
		return "the form's security token is missing or stale: reload the page and try again", http.StatusForbidden
	}
	return "", 0
}

func withPrincipal(r *http.Request, p principal) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), principalKey{}, p))
}

// unauthenticated answers a request without valid credentials: 401 for the API and page
// fragments, a redirect to /login for page views.
func (s *Server) unauthenticated(w http.ResponseWriter, r *http.Request, why string) {
	if isAPI(r) || isMutation(r) {
		if s.auth.hasToken {
			w.Header().Add("WWW-Authenticate", `Bearer realm="copier console"`)
		}
		if s.auth.hasBasic && r.Header.Get(partialHeader) == "" && strings.HasPrefix(r.URL.Path, "/api/") {
			w.Header().Add("WWW-Authenticate", `Basic realm="copier console", charset="UTF-8"`)
		}
		s.refuse(w, r, http.StatusUnauthorized, why+": send Authorization: Bearer <token> or basic credentials, or log in at /login")
		return
	}
	http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
}

// safeNext returns next when it is a path on this site, else "/". Browsers drop tabs and
// line breaks from URLs and read a backslash as a slash, so "/\t/evil.example" or
// "/\\evil.example" would leave the site: anything like that is refused.
func safeNext(next string) string {
	if len(next) == 0 || next[0] != '/' || (len(next) > 1 && next[1] == '/') || strings.ContainsRune(next, '\\') ||
		strings.IndexFunc(next, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return "/"
	}
	if u, err := url.Parse(next); err != nil || u.Scheme != "" || u.Host != "" {
		return "/"
	}
	return next
}

// loginPage shows the login form.
func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	s.renderLogin(w, r, http.StatusOK, "")
}

func (s *Server) renderLogin(w http.ResponseWriter, r *http.Request, status int, msg string) {
	data := struct {
		HasToken, HasBasic bool
		Next, Error        string
	}{s.auth.hasToken, s.auth.hasBasic, safeNext(r.FormValue("next")), msg}
	s.renderPage(w, r, status, "login", "Log in", "", data)
}

// loginSubmit checks a token or user name and password and sets the session cookie.
func (s *Server) loginSubmit(w http.ResponseWriter, r *http.Request) {
	ip := s.auth.throttleKey(r)
	if !s.auth.limiter.allow(ip) {
		s.renderLogin(w, r, http.StatusTooManyRequests, "Too many failed attempts from this address. Try again in a minute.")
		return
	}
	if err := r.ParseForm(); err != nil {
		s.renderLogin(w, r, http.StatusBadRequest, "Cannot read the form.")
		return
	}
	var who string
	switch {
	case r.PostFormValue("token") != "" && s.auth.tokenOK(r.PostFormValue("token")):
		who = "token"
	case r.PostFormValue("user") != "" && s.auth.basicOK(r.PostFormValue("user"), r.PostFormValue("password")):
		who = r.PostFormValue("user")
	default:
		s.auth.limiter.fail(ip)
		s.log.Warn().Str("remote", ip).Msg("console login failed")
		s.renderLogin(w, r, http.StatusUnauthorized, "Wrong token, user name or password.")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: s.auth.newSession(who), Path: "/", HttpOnly: true,
		Secure: s.auth.secure(r), SameSite: http.SameSiteStrictMode, MaxAge: int(sessionTTL.Seconds())})
	s.log.Info().Str("user", who).Str("remote", ip).Msg("console login")
	http.Redirect(w, r, safeNext(r.PostFormValue("next")), http.StatusSeeOther)
}

// logout ends the session: its id is revoked on every process that serves the console
// (the cookie would otherwise stay valid until it expires), and the cookie is cleared.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		if sess, ok := s.auth.checkSession(c.Value); ok {
			if err := s.auth.revoke(r.Context(), sess); err != nil {
				// Revoked in this process only; say so rather than pretend.
				s.log.Error().Err(err).Msg("console logout: session not revoked in the database")
				s.refuse(w, r, http.StatusServiceUnavailable, "logged out here, but the database did not record it: other console processes still accept the session; try again")
				return
			}
			s.log.Info().Str("user", sess.who).Str("remote", clientIP(r)).Msg("console logout")
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", HttpOnly: true, Secure: s.auth.secure(r),
		SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// secure reports whether the client reached the console over TLS: directly, or through a
// trusted reverse proxy that says so in X-Forwarded-Proto. Session cookies are then
// marked Secure.
func (a *authenticator) secure(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	if len(a.trusted) == 0 || !strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto")), "https") {
		return false
	}
	ip, err := netip.ParseAddr(clientIP(r))
	return err == nil && a.isTrusted(ip)
}

// isTrusted reports whether ip is one of the trusted reverse proxies.
func (a *authenticator) isTrusted(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, p := range a.trusted {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// throttleKey is the source failed logins are counted against: the client's address, an
// IPv6 client by its /64 (one host usually holds a whole /64); through a trusted proxy, the
// nearest address in X-Forwarded-For that is not a trusted proxy itself. Without that, one
// guesser behind the proxy locked every operator out.
func (a *authenticator) throttleKey(r *http.Request) string {
	ip, err := netip.ParseAddr(clientIP(r))
	if err != nil {
		return clientIP(r)
	}
	if a.isTrusted(ip) {
		if fwd, ok := a.forwardedClient(r); ok {
			ip = fwd
		}
	}
	return netsource.OfIP(ip)
}

// forwardedClient returns the rightmost address of X-Forwarded-For that is not a trusted
// proxy (the ones to its left are the client's word, not the proxies').
func (a *authenticator) forwardedClient(r *http.Request) (netip.Addr, bool) {
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		ip, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return netip.Addr{}, false
		}
		if !a.isTrusted(ip) {
			return ip, true
		}
	}
	return netip.Addr{}, false
}

// clientIP is the request's remote address without the port.
func clientIP(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

// failLimiter counts failed logins per client address in fixed windows.
type failLimiter struct {
	mu  sync.Mutex
	now func() time.Time
	m   map[string]*failWindow
}

type failWindow struct {
	start time.Time
	n     int
}

func newFailLimiter() *failLimiter {
	return &failLimiter{now: time.Now, m: map[string]*failWindow{}}
}

func (l *failLimiter) allow(ip string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.m[ip]
	return w == nil || l.now().Sub(w.start) >= loginWindow || w.n < loginFailures
}

func (l *failLimiter) fail(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if len(l.m) > 10_000 { // bound the memory an address sweep can take
		for k, w := range l.m {
			if now.Sub(w.start) >= loginWindow {
				delete(l.m, k)
			}
		}
	}
	w := l.m[ip]
	if w == nil || now.Sub(w.start) >= loginWindow {
		w = &failWindow{start: now}
		l.m[ip] = w
	}
	w.n++
}
