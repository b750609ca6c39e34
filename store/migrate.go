package store

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLockKey is the advisory lock that serialises migrations across nodes that start
// at the same moment ("copier" in ASCII).
const migrationLockKey = 0x636f70696572

// Migration is one versioned schema change embedded in the binary.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Migrations returns the embedded migrations in version order.
func Migrations() ([]Migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, e := range entries {
		name := e.Name()
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("store: migration %q: name must start with a positive version and '_'", name)
		}
		body, err := migrationFiles.ReadFile("migrations/" + name)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	if err := checkNumbering(out); err != nil {
		return nil, err
	}
	return out, nil
}

// numberedWithoutGapsFrom is the first version from which migrations are numbered without
// gaps. Versions 5 and 6 were never shipped; databases that applied 7 and later exist, so
// the old gap stays and the rule holds going forward.
const numberedWithoutGapsFrom = 7

// checkNumbering refuses two migrations with one version and, from
// numberedWithoutGapsFrom on, a version that is not the previous one plus one: a skipped
// number is a migration lost in a merge or a rename. migs is sorted by version.
func checkNumbering(migs []Migration) error {
	for i := 1; i < len(migs); i++ {
		prev, cur := migs[i-1], migs[i]
		switch {
		case cur.Version == prev.Version:
			return fmt.Errorf("store: migrations %s and %s share version %d", prev.Name, cur.Name, cur.Version)
		case cur.Version > numberedWithoutGapsFrom && cur.Version != prev.Version+1:
			return fmt.Errorf("store: migration %s follows %s: versions from %d on are numbered without gaps (want %d)",
				cur.Name, prev.Name, numberedWithoutGapsFrom, prev.Version+1)
		}
	}
	return nil
}

// ErrMagicClash: links into one follower share a magic number, which the schema forbids
// (UNIQUE (follower_id, magic)): a migration found existing ones, or a write would make one.
var ErrMagicClash = errors.New("store: two links into one follower share a magic number")

// Migrate applies every embedded migration the database lacks, in one transaction under an
// advisory lock, so several nodes may start at once. It returns the versions it applied;
// none when the schema is up to date.
func Migrate(ctx context.Context, pool *pgxpool.Pool) ([]int, error) {
	migs, err := Migrations()
	if err != nil {
		return nil, err
	}
	var applied []int
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLockKey)); err != nil {
			return fmt.Errorf("store: migration lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer     PRIMARY KEY,
			name       text        NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("store: schema_migrations: %w", err)
		}
		done := map[int]bool{}
		rows, err := tx.Query(ctx, `SELECT version FROM schema_migrations`)
		if err != nil {
			return err
		}
		versions, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			return err
		}
		for _, v := range versions {
			done[int(v)] = true
		}
		for _, m := range migs {
			if done[m.Version] {
				continue
			}
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				var pe *pgconn.PgError
				if errors.As(err, &pe) && pe.Code == "CP001" {
					return fmt.Errorf("%w: migration %s: %s (%s)", ErrMagicClash, m.Name, pe.Message, pe.Hint)
				}
				return fmt.Errorf("store: migration %s: %w", m.Name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
				return err
			}
			applied = append(applied, m.Version)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return applied, nil
}
