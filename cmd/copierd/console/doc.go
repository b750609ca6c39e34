// Package console is the copier's operator console: server-rendered HTML pages (Go
// html/template, a little plain JavaScript, every asset embedded, no CDN) and a JSON API
// under /api/ for the same things. See cmd/copierd/API.md for the API.
//
// Pages:
//
//	/                      cluster: every node seen in the database, this node's gate and trust
//	/accounts              searchable, paginated accounts table (server-side; fine at 20,000 rows)
//	/accounts/new          create an account
//	/accounts/{id}         detail: links, master positions beside follower copies, copy journal
//	/accounts/{id}/edit    edit an account
//	/links                 links; /links/new and /links/{id}/edit create and edit them
//	/platforms             platforms and their FIX symbol lists; /platforms/{platform}/fix-symbols edits one
//	/login, /logout        session login for browsers (with a token or user and password)
//
// Pages refresh their live parts by polling (every 2–3 s) for server-rendered fragments, so
// there is one template per view and no client-side rendering.
//
// # Access
//
// With Options.Token and/or Options.User and Options.Password set, every page and API call
// needs them: an "Authorization: Bearer <token>" header, HTTP basic credentials, or a
// session cookie from /login (HttpOnly, SameSite=Strict, 12 h; Secure over TLS or behind a
// trusted proxy that says https, Options.TrustedProxies). Logout revokes the session in the
// database (console_revoked_sessions), so every console process refuses the old cookie.
// Lockout: ten failed passwords or tokens from one source within a minute get 429 for the
// rest of that minute, the right credentials included (a guesser must not learn its hit);
// session cookies are not affected. A source is an IPv4 address or an IPv6 /64; through a
// trusted proxy (Options.TrustedProxies) it is the nearest X-Forwarded-For address that is
// not a trusted proxy, so a guesser behind the proxy does not lock out everyone behind it.
// A request that authenticates marks its connection (internal/connauth): the server holds
// connections without that mark to a short header timeout and one request.
// Without credentials the
// console is read-only and answers only loopback clients addressed by a loopback host name
// (a guard against DNS rebinding); CheckBind refuses a non-loopback listen address in that
// case. Mutations are refused without credentials.
//
// Cross-site request forgery: every non-GET request passes net/http's
// CrossOriginProtection (Sec-Fetch-Site / Origin); HTML forms also carry a per-session
// token; API mutations must be JSON (Content-Type: application/json), which a cross-site
// form cannot send.
//
// # Secrets
//
// A password given for an account is sealed with Options.Sealer (store/secrets, AES-GCM)
// before it reaches the database, and is never returned, rendered, logged, or repeated in
// an error. Nodes open it with CredentialsFunc.
//
// # Draining
//
// "Pause claiming" calls Node.SetDraining(true): the node keeps and renews what it holds
// but claims nothing new (reversible). "Drain" pauses claiming and then calls Node.Stop,
// the engine's graceful hand-back: every AccountActor finishes its in-flight order, the
// buffered statuses are written, and every lease is released at once so other nodes claim
// the accounts in their next cycle instead of waiting for the leases to expire. "Resume"
// undoes a drain when the process gave the console Options.Restart (copierd run does): the
// node starts again with the same configuration. Without it a drained node stays stopped
// until the process restarts. The console keeps serving.
//
// # Operations
//
// Creating and editing accounts and links are operations that know nothing of HTTP
// (createAccount, updateAccount, createLink, updateLink): they take the acting user and the
// input and return an *opError whose refusal kind maps to a status in one place
// (refusal.status, ops.go). Two skeletons serve them: apiWrite for the JSON handlers and
// formWrite for the HTML forms; forms.go holds the form helpers.
//
// # Input
//
// Bodies are decoded by internal/strictjson: one JSON object, keys exactly as documented,
// each once, nothing after it. Actions without input (enable, disable, drain, resume)
// accept no body or {} only. A refused request changes nothing, and neither does a no-op.
package console
