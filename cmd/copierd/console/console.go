package console

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/secrets"
)

// Environment variables the caller reads into Options (the console never reads the
// environment itself); named here so messages and callers agree.
const (
	// EnvToken holds the bearer token (Options.Token).
	EnvToken = "COPIER_CONSOLE_TOKEN"
	// EnvUser holds the basic-auth user name (Options.User).
	EnvUser = "COPIER_CONSOLE_USER"
	// EnvPassword holds the basic-auth password (Options.Password).
	EnvPassword = "COPIER_CONSOLE_PASSWORD"
	// EnvKey holds the key that seals broker credentials (see store/secrets.KeyFromEnv).
	EnvKey = "COPIER_SECRET_KEY"
)

// MinTokenLength is the shortest bearer token New accepts.
const MinTokenLength = 16

// Options configure a console Server.
type Options struct {
	// Pool is the copier database (required).
	Pool *pgxpool.Pool
	// Node is the node embedded in this process, or nil: the cluster page then shows only
	// what the database knows, and the node actions and journals are unavailable.
	Node *actors.Node
	// Restart, when set, starts the node again after a drain (POST /api/node/resume) and
	// returns it; the caller also makes it the process's node for /metrics and shutdown.
	// Without it a drained node stays stopped until the process restarts.
	Restart func(context.Context) (*actors.Node, error)
	// Control, when set, lets the account page show master positions beside the
	// follower's copies (broker/sim and broker/bridge implement it).
	Control broker.Controller
	// Sealer seals the broker passwords given for accounts. Without it the console
	// refuses to store a password (and says why).
	Sealer *secrets.Sealer
	// Token is a bearer token (COPIER_CONSOLE_TOKEN), at least MinTokenLength characters.
	Token string
	// User and Password are HTTP basic credentials (COPIER_CONSOLE_USER and
	// COPIER_CONSOLE_PASSWORD); both or neither.
	User, Password string
	// TrustedProxies are the reverse proxies (addresses or networks) whose
	// X-Forwarded-Proto and X-Forwarded-For headers are believed: a login through one of
	// them that says "https" gets a Secure session cookie (requests that arrive over TLS
	// always do), and failed logins count against the client it forwards for.
	TrustedProxies []netip.Prefix
	// Logger receives one line per mutation (who, what, which id) and per failure. It
	// never receives a password or a request body.
	Logger zerolog.Logger
}

// hasCredentials reports whether access is protected.
func (o Options) hasCredentials() bool { return o.Token != "" || o.User != "" }

// checkCredentials validates the access settings.
func (o Options) checkCredentials() error {
	if (o.User == "") != (o.Password == "") {
		return fmt.Errorf("console: %s and %s must be set together", EnvUser, EnvPassword)
	}
	if strings.ContainsAny(o.User, ":\r\n") {
		return fmt.Errorf("console: %s must not contain a colon or a line break", EnvUser)
	}
	if o.Token != "" && len(o.Token) < MinTokenLength {
		return fmt.Errorf("console: %s must be at least %d characters (generate one with: openssl rand -hex 32)", EnvToken, MinTokenLength)
	}
	if strings.ContainsAny(o.Token, " \t\r\n") {
		return fmt.Errorf("console: %s must not contain white space", EnvToken)
	}
	return nil
}

// ErrInsecureBind is returned by CheckBind for a non-loopback address without credentials.
var ErrInsecureBind = errors.New("console: refusing a non-loopback address without credentials")

// CheckBind reports whether the console may listen on addr (HOST:PORT) with opts: without
// credentials only a loopback address is allowed (127.0.0.0/8, ::1 or localhost); an
// empty host, 0.0.0.0, :: or any other name or address is refused with a message saying
// how to fix it. It also validates the credentials themselves.
func CheckBind(addr string, opts Options) error {
	if err := opts.checkCredentials(); err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("console: listen address %q: want HOST:PORT, e.g. 127.0.0.1:8080", addr)
	}
	if opts.hasCredentials() || isLoopbackBind(host) {
		return nil
	}
	shown := host
	if shown == "" {
		shown = "every interface"
	}
	return fmt.Errorf("%w: %q listens on %s, which other machines can reach; listen on 127.0.0.1 (or localhost), "+
		"or set %s, or %s and %s", ErrInsecureBind, addr, shown, EnvToken, EnvUser, EnvPassword)
}

// isLoopbackBind reports whether a listen host is localhost or a loopback IP address. A
// name under .localhost is not accepted here: the resolver (/etc/hosts) may map it to any
// address.
func isLoopbackBind(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// isLoopbackHost reports whether a request's host name (no port) is localhost, a name
// under .localhost (browsers resolve those to loopback themselves) or a loopback IP
// address.
func isLoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// CredentialsFunc returns the actors.Deps.Credentials function for accounts whose
// credentials the console sealed: it opens them with sealer. An account without stored
// credentials connects with an empty password. With a nil sealer, stored credentials
// are an error (they cannot be opened), never passed on sealed.
func CredentialsFunc(sealer *secrets.Sealer) func(store.Account) (broker.Credentials, error) {
	return func(a store.Account) (broker.Credentials, error) {
		c := broker.Credentials{Login: a.Login, Server: a.Server, FIX: actors.FIXSession(a.FIX)}
		if len(a.Credentials) == 0 {
			return c, nil
		}
		if sealer == nil {
			return broker.Credentials{}, fmt.Errorf("account %d has sealed credentials but no key is configured (%s)", a.ID, EnvKey)
		}
		pw, err := sealer.Open(a.Credentials)
		if err != nil {
			return broker.Credentials{}, fmt.Errorf("account %d credentials: %w", a.ID, err)
		}
		c.Password = pw
		return c, nil
	}
}

// Server is the console. Create it with New and serve Handler.
type Server struct {
	opts    Options
	log     zerolog.Logger
	pages   map[string]*template.Template
	handler http.Handler
	auth    *authenticator
	node    *nodeControl
}

// New validates opts and returns a console.
func New(opts Options) (*Server, error) {
	if opts.Pool == nil {
		return nil, errors.New("console: a database pool is required")
	}
	if err := opts.checkCredentials(); err != nil {
		return nil, err
	}
	pages, err := loadTemplates()
	if err != nil {
		return nil, fmt.Errorf("console: templates: %w", err)
	}
	s := &Server{
		opts:  opts,
		log:   opts.Logger.With().Str("component", "console").Logger(),
		pages: pages,
		auth:  newAuthenticator(opts),
		node:  &nodeControl{node: opts.Node, restart: opts.Restart, claiming: true},
	}
	s.handler = s.routes()
	return s, nil
}

// Handler returns the console's HTTP handler: pages at /, /accounts, /accounts/{id},
// /links, ..., the JSON API under /api/, assets under /static/. Mount it at the root.
func (s *Server) Handler() http.Handler { return s.handler }

// requestTimeout bounds the database and broker work of one request.
const requestTimeout = 10 * time.Second

// routes builds the handler: security headers, cross-origin protection and
// authentication around the page and API routes.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))

	// Session.
	mux.HandleFunc("GET /login", s.loginPage)
	mux.HandleFunc("POST /login", s.loginSubmit)
	mux.HandleFunc("POST /logout", s.logout)

	// Pages.
	mux.HandleFunc("GET /{$}", s.clusterPage)
	mux.HandleFunc("GET /accounts", s.accountsPage)
	mux.HandleFunc("GET /accounts/new", s.accountNewPage)
	mux.HandleFunc("POST /accounts/new", s.accountNewSubmit)
	mux.HandleFunc("GET /accounts/{id}", s.accountPage)
	mux.HandleFunc("GET /accounts/{id}/edit", s.accountEditPage)
	mux.HandleFunc("POST /accounts/{id}/edit", s.accountEditSubmit)
	mux.HandleFunc("POST /accounts/{id}/enable", s.enableSubmit(accountSwitch, true))
	mux.HandleFunc("POST /accounts/{id}/disable", s.enableSubmit(accountSwitch, false))
	mux.HandleFunc("POST /accounts/{id}/protection", s.protectionSubmit)
	mux.HandleFunc("POST /accounts/{id}/protection/reset", s.protectionResetSubmit)
	mux.HandleFunc("GET /links", s.linksPage)
	mux.HandleFunc("GET /links/new", s.linkNewPage)
	mux.HandleFunc("POST /links/new", s.linkNewSubmit)
	mux.HandleFunc("GET /links/{id}", s.linkRedirect)
	mux.HandleFunc("GET /links/{id}/edit", s.linkEditPage)
	mux.HandleFunc("POST /links/{id}/edit", s.linkEditSubmit)
	mux.HandleFunc("POST /links/{id}/enable", s.enableSubmit(linkSwitch, true))
	mux.HandleFunc("POST /links/{id}/disable", s.enableSubmit(linkSwitch, false))
	mux.HandleFunc("GET /platforms", s.platformsPage)
	mux.HandleFunc("GET /platforms/{platform}/fix-symbols", s.platformSymbolsPage)
	mux.HandleFunc("POST /platforms/{platform}/fix-symbols", s.platformSymbolsSubmit)
	mux.HandleFunc("POST /node/claiming", s.nodeClaimingSubmit)
	mux.HandleFunc("POST /node/drain", s.nodeDrainSubmit)
	mux.HandleFunc("POST /node/resume", s.nodeResumeSubmit)

	// API.
	mux.HandleFunc("GET /api/cluster", s.apiCluster)
	mux.HandleFunc("GET /api/node", s.apiNode)
	mux.HandleFunc("POST /api/node/claiming", s.apiNodeClaiming)
	mux.HandleFunc("POST /api/node/drain", s.apiNodeDrain)
	mux.HandleFunc("POST /api/node/resume", s.apiNodeResume)
	mux.HandleFunc("GET /api/accounts", s.apiAccounts)
	mux.HandleFunc("POST /api/accounts", s.apiAccountCreate)
	mux.HandleFunc("GET /api/accounts/{id}", s.apiAccount)
	mux.HandleFunc("PATCH /api/accounts/{id}", s.apiAccountUpdate)
	mux.HandleFunc("POST /api/accounts/{id}/enable", s.apiEnable(accountSwitch, true))
	mux.HandleFunc("POST /api/accounts/{id}/disable", s.apiEnable(accountSwitch, false))
	mux.HandleFunc("GET /api/accounts/{id}/positions", s.apiAccountPositions)
	mux.HandleFunc("GET /api/accounts/{id}/journal", s.apiAccountJournal)
	mux.HandleFunc("GET /api/accounts/{id}/protection", s.apiProtection)
	mux.HandleFunc("PUT /api/accounts/{id}/protection", s.apiProtectionSet)
	mux.HandleFunc("POST /api/accounts/{id}/protection/reset", s.apiProtectionReset)
	mux.HandleFunc("GET /api/platforms/{platform}/fix-symbols", s.apiPlatformSymbols)
	mux.HandleFunc("PUT /api/platforms/{platform}/fix-symbols", s.apiPlatformSymbolsSet)
	mux.HandleFunc("GET /api/links", s.apiLinks)
	mux.HandleFunc("POST /api/links", s.apiLinkCreate)
	mux.HandleFunc("GET /api/links/{id}", s.apiLink)
	mux.HandleFunc("PATCH /api/links/{id}", s.apiLinkUpdate)
	mux.HandleFunc("POST /api/links/{id}/enable", s.apiEnable(linkSwitch, true))
	mux.HandleFunc("POST /api/links/{id}/disable", s.apiEnable(linkSwitch, false))
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		// The path may exist with other methods: say which.
		var allow []string
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch} {
			probe := r.Clone(r.Context())
			probe.Method = m
			if _, pattern := mux.Handler(probe); pattern != "/api/" {
				allow = append(allow, m)
			}
		}
		if len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeError(w, http.StatusMethodNotAllowed, r.Method+" is not allowed on "+r.URL.Path+"; use "+strings.Join(allow, " or "))
			return
		}
		writeError(w, http.StatusNotFound, "no such API endpoint: "+r.Method+" "+r.URL.Path+" (see API.md)")
	})

	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.refuse(w, r, http.StatusForbidden, "cross-origin request refused: the console accepts changes only from its own pages or from non-browser clients")
	}))
	return securityHeaders(cop.Handler(s.auth.middleware(s, mux)))
}

// securityHeaders sets the headers every response carries: a strict content security
// policy (only the console's own scripts and styles), no framing, no sniffing, no caching.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
			"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		if !strings.HasPrefix(r.URL.Path, "/static/") {
			h.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r)
	})
}
