// Package storetest gives tests a real PostgreSQL: one throwaway cluster per test binary,
// started from the machine's PostgreSQL binaries (store/pgcluster) or, when
// COPIER_TEST_DATABASE_URL is set, an existing server; and for every test a fresh database
// cloned from a migrated template. Tests never skip because PostgreSQL is missing: they
// fail and say how to install it.
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { storetest.Main(m) }
//
// and in a test: db := storetest.NewDB(t).
package storetest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/pgcluster"
)

// EnvURL names the variable that points the harness at an existing server (a URL of any
// database on it; the user must be allowed to create databases).
const EnvURL = "COPIER_TEST_DATABASE_URL"

// harness is the per-binary server. It is the one piece of package state in this module:
// a test binary has exactly one TestMain, and Main sets it before any test runs.
type harness struct {
	cluster  *pgcluster.Cluster // nil with an external server
	adminURL string             // URL of the maintenance database
	template string
	admin    *pgxpool.Pool
	cloneMu  sync.Mutex // CREATE DATABASE … TEMPLATE refuses concurrent use of a template
	seq      atomic.Int64
	startErr error
}

var current *harness

// Main starts the server, builds the migrated template, runs the tests and tears
// everything down. It calls os.Exit.
//
// checks run after the tests and the cluster have stopped (a goroutine leak check, say);
// one that fails fails the binary.
func Main(m *testing.M, checks ...func() error) {
	h := start()
	current = h
	code := m.Run()
	h.stop()
	for _, check := range checks {
		if err := check(); err != nil && code == 0 {
			fmt.Fprintln(os.Stderr, "storetest: after the tests:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func start() *harness {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h := &harness{template: fmt.Sprintf("copier_template_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6)}
	if ext := os.Getenv(EnvURL); ext != "" {
		h.adminURL = ext
	} else {
		c, err := pgcluster.Start(ctx, pgcluster.Options{})
		if err != nil {
			h.startErr = fmt.Errorf("storetest: cannot start PostgreSQL: %w", err)
			return h
		}
		h.cluster = c
		h.adminURL = c.URL("postgres")
	}
	if err := h.prepare(ctx); err != nil {
		h.startErr = err
	}
	return h
}

func (h *harness) prepare(ctx context.Context) error {
	admin, err := pgxpool.New(ctx, h.adminURL)
	if err != nil {
		return fmt.Errorf("storetest: %w", err)
	}
	h.admin = admin
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{h.template}.Sanitize()); err != nil {
		return fmt.Errorf("storetest: create template: %w", err)
	}
	pool, err := pgxpool.New(ctx, withDatabase(h.adminURL, h.template))
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := store.Migrate(ctx, pool); err != nil {
		return fmt.Errorf("storetest: migrate template: %w", err)
	}
	return nil
}

func (h *harness) stop() {
	if h.admin != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, _ = h.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{h.template}.Sanitize()+" WITH (FORCE)")
		cancel()
		h.admin.Close()
	}
	if h.cluster != nil {
		_ = h.cluster.Stop()
	}
}

// DB is one test's private, migrated database.
type DB struct {
	Name string
	URL  string
	Pool *pgxpool.Pool // closed at the end of the test
}

// NewDB returns a fresh migrated database, dropped at the end of the test.
func NewDB(t testing.TB) *DB {
	t.Helper()
	h := current
	if h == nil {
		t.Fatal("storetest: call storetest.Main(m) from TestMain")
	}
	if h.startErr != nil {
		t.Fatalf("%v\nInstall PostgreSQL (Debian: apt-get install -y postgresql) or set %s.", h.startErr, EnvURL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	name := fmt.Sprintf("%s_t%d", h.template, h.seq.Add(1))
	h.cloneMu.Lock()
	_, err := h.admin.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s",
		pgx.Identifier{name}.Sanitize(), pgx.Identifier{h.template}.Sanitize()))
	h.cloneMu.Unlock()
	if err != nil {
		t.Fatalf("storetest: clone database: %v", err)
	}
	db := &DB{Name: name, URL: withDatabase(h.adminURL, name)}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = h.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	})
	db.Pool = db.NewPool(t, store.Options{})
	return db
}

// NewPool opens another pool on the test database, as a separate node would, closed at
// the end of the test.
func (d *DB) NewPool(t testing.TB, o store.Options) *pgxpool.Pool {
	t.Helper()
	pool, err := store.Open(context.Background(), d.URL, o)
	if err != nil {
		t.Fatalf("storetest: open pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// URLVia returns the test database's URL with host:port replaced, e.g. to reach it through
// a fault-injecting proxy.
func (d *DB) URLVia(hostport string) string {
	u, err := url.Parse(d.URL)
	if err != nil {
		panic(err) // built by withDatabase from a URL that parsed
	}
	u.Host = hostport
	return u.String()
}

// Cluster returns the harness's own server, or nil when tests run against an external one
// (tests that restart the server need it).
func Cluster() *pgcluster.Cluster {
	if current == nil {
		return nil
	}
	return current.cluster
}

// withDatabase swaps the database name in a postgres URL.
func withDatabase(raw, db string) string {
	u, err := url.Parse(raw)
	if err != nil || !strings.HasPrefix(u.Scheme, "postgres") {
		// Keyword/value DSN: append dbname, the last one wins.
		return raw + " dbname=" + db
	}
	u.Path = "/" + db
	return u.String()
}
