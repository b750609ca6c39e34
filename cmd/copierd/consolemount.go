package main

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/cmd/copierd/console"
	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/secrets"
)

// consoleEnv is the console's configuration from the environment: access credentials and
// the key that seals broker passwords at rest.
type consoleEnv struct {
	token, user, password string
	sealer                *secrets.Sealer // nil without COPIER_SECRET_KEY
	trusted               []netip.Prefix  // --trusted-proxies
}

// readConsoleEnv reads COPIER_CONSOLE_TOKEN / _USER / _PASSWORD and COPIER_SECRET_KEY. A
// missing key is not an error (passwords then cannot be stored); a malformed one is.
func readConsoleEnv() (consoleEnv, error) {
	e := consoleEnv{token: os.Getenv(console.EnvToken), user: os.Getenv(console.EnvUser), password: os.Getenv(console.EnvPassword)}
	key, err := secrets.KeyFromEnv(console.EnvKey)
	switch {
	case errors.Is(err, secrets.ErrNoKey):
	case err != nil:
		return e, err
	default:
		if e.sealer, err = secrets.NewSealer(key); err != nil {
			return e, fmt.Errorf("%s: %w", console.EnvKey, err)
		}
	}
	return e, nil
}

func (e consoleEnv) options(pool *pgxpool.Pool, node *actors.Node, ctl broker.Controller, log zerolog.Logger) console.Options {
	return console.Options{Pool: pool, Node: node, Control: ctl, Sealer: e.sealer, Token: e.token, User: e.user, Password: e.password,
		TrustedProxies: e.trusted,
		Logger:         log.With().Str("component", "console").Logger()}
}

// credentials unseals account passwords for the engine.
func (e consoleEnv) credentials() func(store.Account) (broker.Credentials, error) {
	return console.CredentialsFunc(e.sealer)
}

// checkConsole validates the console's access settings for addr before anything starts:
// bad credentials are a usage error; a non-loopback address without credentials only
// disables the console (health, readiness and metrics stay served), which it reports.
func checkConsole(addr string, opts console.Options) (enabled bool, warning string, err error) {
	err = console.CheckBind(addr, opts)
	if errors.Is(err, console.ErrInsecureBind) {
		return false, "console disabled: " + err.Error(), nil
	}
	return err == nil, "", err
}

// mountConsole builds the console and serves it from web.
func mountConsole(web *statusHTTP, opts console.Options) error {
	con, err := console.New(opts)
	if err != nil {
		return err
	}
	h := con.Handler()
	web.console.Store(&h)
	return nil
}

// newDemoConsole generates a sealing key and an access token for one demo run, so the
// console is fully usable (and passwords are sealed) without any set-up.
func newDemoConsole() (consoleEnv, error) {
	key, err := secrets.GenerateKey()
	if err != nil {
		return consoleEnv{}, err
	}
	sealer, err := secrets.NewSealer(key)
	if err != nil {
		return consoleEnv{}, err
	}
	tok := make([]byte, 18)
	if _, err := rand.Read(tok); err != nil {
		return consoleEnv{}, err
	}
	return consoleEnv{token: base64.RawURLEncoding.EncodeToString(tok), sealer: sealer}, nil
}
