package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/snapcopier/copier/store"
)

func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("migrate", "Applies the embedded schema migrations. Safe to run from several\nnodes at once; exits 0 when the schema is already up to date.", stderr)
	dbURL := fs.String("database-url", "", "PostgreSQL URL, postgres://user:password@host:port/dbname (required)")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if *dbURL == "" {
		fmt.Fprintln(stderr, "copierd migrate: --database-url (or COPIER_DATABASE_URL) is required")
		return exitUsage
	}
	cfg, err := store.ParseConfig(*dbURL, store.Options{MaxConns: 2, ApplicationName: "copierd-migrate"})
	if err != nil {
		fmt.Fprintf(stderr, "copierd migrate: %v\n", err)
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	pool, err := store.OpenConfig(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "copierd migrate: %v\n", err)
		return exitFailure
	}
	defer pool.Close()
	applied, err := store.Migrate(ctx, pool)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("database not reachable within %v: %w", *timeout, err)
		}
		fmt.Fprintf(stderr, "copierd migrate: %s\n", oneLine(err))
		if errors.Is(err, store.ErrMagicClash) {
			return exitUsage // the data must be fixed first; retrying cannot help
		}
		return exitFailure
	}
	if len(applied) == 0 {
		fmt.Fprintln(stdout, "schema up to date")
	} else {
		fmt.Fprintf(stdout, "applied migrations %v\n", applied)
	}
	return exitOK
}

// oneLine flattens an error message to a single line for stderr.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
