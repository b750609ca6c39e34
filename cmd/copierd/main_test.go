package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(childMain())
	}
	storetest.Main(m)
}

// runCLI runs one copierd invocation in-process.
func runCLI(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	var out, errb bytes.Buffer
	code = dispatch(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestMigrateTwiceIsANoOp(t *testing.T) {
	db := storetest.NewDB(t)
	if _, err := db.Pool.Exec(context.Background(), `DROP SCHEMA public CASCADE; CREATE SCHEMA public`); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, nil, "migrate", "--database-url", db.URL)
	if code != exitOK || !strings.Contains(out, "applied migrations") {
		t.Fatalf("first migrate: code %d out %q err %q", code, out, errs)
	}
	code, out, errs = runCLI(t, map[string]string{"COPIER_DATABASE_URL": db.URL}, "migrate")
	if code != exitOK || !strings.Contains(out, "up to date") {
		t.Fatalf("second migrate: code %d out %q err %q", code, out, errs)
	}
}

func TestCLIErrors(t *testing.T) {
	cases := []struct {
		name     string
		args     []string
		code     int
		stderrIn string
	}{
		{"no command", nil, exitUsage, ""},
		{"unknown command", []string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{"migrate without url", []string{"migrate"}, exitUsage, "--database-url (or COPIER_DATABASE_URL) is required"},
		{"migrate bad url", []string{"migrate", "--database-url", "::::"}, exitUsage, "bad database URL"},
		{"migrate unknown flag", []string{"migrate", "--nope"}, exitUsage, "flag provided but not defined: -nope (see: copierd migrate -h)"},
		{"run bad duration", []string{"run", "--lease", "soon"}, exitUsage, `invalid value "soon" for flag -lease`},
		{"run unknown flag", []string{"run", "--nope"}, exitUsage, "(see: copierd run -h)"},
		{"migrate unreachable", []string{"migrate", "--database-url", "postgres://u@127.0.0.1:1/db", "--timeout", "5s"}, exitFailure, "connection refused"},
		{"migrate stray argument", []string{"migrate", "extra"}, exitUsage, `unexpected argument "extra"`},
		{"run gc percent too low", []string{"run", "--database-url", "postgres://u@h/db", "--platform", "sim", "--broker", "sim", "--gc-percent", "5"}, exitUsage, "--gc-percent: gc percent 5 out of range [10, 10000]"},
		{"demo gc percent too high", []string{"demo", "--gc-percent", "20000"}, exitUsage, "--gc-percent: gc percent 20000 out of range [10, 10000]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("COPIER_DATABASE_URL", "")
			code, _, errs := runCLI(t, nil, c.args...)
			if code != c.code || !strings.Contains(errs, c.stderrIn) {
				t.Fatalf("code %d stderr %q; want %d containing %q", code, errs, c.code, c.stderrIn)
			}
			if strings.Count(strings.TrimSpace(errs), "\n") > 0 && c.stderrIn != "" {
				t.Fatalf("error is not one line: %q", errs)
			}
		})
	}
}

func TestHelpListsCommands(t *testing.T) {
	code, out, _ := runCLI(t, nil, "help")
	if code != exitOK || !strings.Contains(out, "migrate") {
		t.Fatalf("help: %d %q", code, out)
	}
}

// TestMigrateWithAMagicClashExits2: a database that has two links into one follower with
// one magic cannot take the UNIQUE (follower_id, magic) migration; migrate says which
// links and exits 2 (fix the data, retrying cannot help).
func TestMigrateWithAMagicClashExits2(t *testing.T) {
	db := storetest.NewDB(t)
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO trading_accounts (id, platform, role, login) VALUES (1, 'mt5', 'follower', 'f1'), (100, 'mt5', 'master', 'm100'), (101, 'mt5', 'master', 'm101')`,
		`ALTER TABLE copy_links DROP CONSTRAINT ` + store.LinkMagicConstraint,
		`DELETE FROM schema_migrations WHERE version = 2`,
		`INSERT INTO copy_links (master_id, follower_id, magic) VALUES (100, 1, 7), (101, 1, 7)`,
	} {
		if _, err := db.Pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := runCLI(t, nil, "migrate", "--database-url", db.URL)
	if code != exitUsage || !strings.Contains(errs, "share a magic number") || !strings.Contains(errs, "follower 1: magic 7") {
		t.Fatalf("migrate with a clash: code %d out %q err %q", code, out, errs)
	}
}
