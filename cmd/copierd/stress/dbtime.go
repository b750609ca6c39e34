package stress

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// DatabaseTime is where PostgreSQL's time went during the load, by statement, from
// pg_stat_statements (a throwaway PostgreSQL that has the module: an external database's
// statistics are its owner's to reset). The time is the server's execution time, lock
// waits included: a statement that waits on a row lock counts here though it spends no
// CPU. A restart-db fault loses the counts before it.
type DatabaseTime struct {
	TotalMs    float64         `json:"total_ms"`   // every statement of the stress database
	Statements []StatementTime `json:"statements"` // the top ones by time
}

// StatementTime is one normalised statement's share of DatabaseTime.
type StatementTime struct {
	Query   string  `json:"query"` // whitespace folded, cut at statementChars
	Calls   int64   `json:"calls"`
	TotalMs float64 `json:"total_ms"`
	Rows    int64   `json:"rows"`
	Share   float64 `json:"share"` // of DatabaseTime.TotalMs
}

const (
	topStatements  = 10
	statementChars = 160
)

// watchStatements installs pg_stat_statements in the stress database when the throwaway
// cluster loaded it; it reports whether the load can be measured.
func (r *runner) watchStatements(ctx context.Context) (bool, error) {
	if r.cluster == nil || !r.cluster.Preloaded("pg_stat_statements") {
		return false, nil
	}
	if _, err := r.pool.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		return false, fmt.Errorf("stress: pg_stat_statements: %w", err)
	}
	return true, nil
}

// resetStatements forgets what the setup cost, so that the counts read at the end of the
// load are the load's.
func (r *runner) resetStatements(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := r.pool.Exec(ctx, `SELECT pg_stat_statements_reset()`)
	return err
}

// readStatements reads the stress database's top statements, the most time first, and the
// time of all of them.
func (r *runner) readStatements(ctx context.Context) (*DatabaseTime, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rows, err := r.pool.Query(ctx, `
		SELECT query, calls, total_exec_time, rows, sum(total_exec_time) OVER () FROM pg_stat_statements
		WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		ORDER BY total_exec_time DESC LIMIT $1`, topStatements)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out DatabaseTime
	for rows.Next() {
		var s StatementTime
		var q string
		if err := rows.Scan(&q, &s.Calls, &s.TotalMs, &s.Rows, &out.TotalMs); err != nil {
			return nil, err
		}
		s.Query = foldStatement(q)
		out.Statements = append(out.Statements, s)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i := range out.Statements {
		s := &out.Statements[i]
		s.TotalMs = round3(s.TotalMs)
		if out.TotalMs > 0 {
			s.Share = round3(s.TotalMs / out.TotalMs)
		}
	}
	out.TotalMs = round3(out.TotalMs)
	return &out, nil
}

// foldStatement folds a statement's whitespace and cuts it to statementChars characters.
func foldStatement(q string) string {
	q = strings.Join(strings.Fields(q), " ")
	if r := []rune(q); len(r) > statementChars {
		q = string(r[:statementChars-1]) + "…"
	}
	return q
}

// summary is the text summary's lines for the database's time.
func (d *DatabaseTime) summary() []string {
	lines := []string{fmt.Sprintf("database time during the load (pg_stat_statements; lock waits included): %.1f s in all, top statements:", d.TotalMs/1000),
		"     calls   total s  share   ms/call       rows  statement"}
	for _, s := range d.Statements {
		perCall := 0.0
		if s.Calls > 0 {
			perCall = s.TotalMs / float64(s.Calls)
		}
		lines = append(lines, fmt.Sprintf("  %8d  %8.1f  %4.1f%%  %8.2f  %9d  %s", s.Calls, s.TotalMs/1000, 100*s.Share, perCall, s.Rows, s.Query))
	}
	return lines
}
