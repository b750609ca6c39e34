package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// ReleaseChannel is the NOTIFY channel of lease releases. Every statement that gives a
// follower's lease back (a clean shutdown, a drain, a switched-off account, a hand-off)
// notifies it in the releasing transaction, so the notification is delivered exactly when
// the release commits. The payload is "<platform> <node>": a platform never contains a
// space, the releasing node's id may.
const ReleaseChannel = "copier_lease_released"

// Released is one release notification.
type Released struct {
	Platform string // the platform of the released followers
	Node     string // the node that released them
}

func parseReleased(payload string) (Released, bool) {
	platform, node, ok := strings.Cut(payload, " ")
	if !ok || platform == "" {
		return Released{}, false
	}
	return Released{Platform: platform, Node: node}, true
}

// notifyReleased notifies ReleaseChannel once per platform, inside tx: nothing is sent
// unless the release commits. PostgreSQL folds identical notifications of one transaction.
func notifyReleased(ctx context.Context, tx pgx.Tx, node string, platforms []string) error {
	if len(platforms) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `SELECT pg_notify($1, p || ' ' || $2) FROM (SELECT DISTINCT unnest($3::text[]) AS p) d`,
		ReleaseChannel, node, platforms)
	if err != nil {
		return fmt.Errorf("notify release: %w", err)
	}
	return nil
}

// ListenOptions configure ListenReleases.
type ListenOptions struct {
	// OnRelease is called for every release notification, on the listener's goroutine:
	// it must return at once.
	OnRelease func(Released)
	// OnState is called with true once LISTEN is in place (after every reconnection: the
	// notifications of the gap are lost, so the caller should act as if woken) and with
	// false when the connection is lost.
	OnState func(up bool)
	// Retry is the first wait before reconnecting (default 200 ms); it doubles up to
	// MaxRetry (default 5 s).
	Retry, MaxRetry time.Duration
	// Probe is how long the connection may stay silent before it is pinged (default 30 s),
	// so a connection cut without a reset is found and replaced.
	Probe time.Duration
}

// ListenReleases LISTENs on ReleaseChannel on a connection of its own (never one of a
// pool: it is held for as long as the node runs) until ctx ends, reconnecting whenever the
// connection is lost. A database or pooler that cannot deliver notifications only loses
// the wake-ups: lease cycles still run at their interval.
func ListenReleases(ctx context.Context, cfg *pgx.ConnConfig, o ListenOptions) {
	o.Retry = cmpOr(o.Retry, 200*time.Millisecond)
	o.MaxRetry = cmpOr(o.MaxRetry, 5*time.Second)
	o.Probe = cmpOr(o.Probe, 30*time.Second)
	wait := o.Retry
	for ctx.Err() == nil {
		err := listenOnce(ctx, cfg, o, func() { wait = o.Retry })
		if ctx.Err() != nil {
			return
		}
		_ = err // the next attempt reports through OnState; the interval covers the gap
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(wait*2, o.MaxRetry)
	}
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// listenOnce connects, LISTENs and delivers notifications until the connection fails.
func listenOnce(ctx context.Context, cfg *pgx.ConnConfig, o ListenOptions, connected func()) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := pgx.ConnectConfig(cctx, cfg.Copy())
	cancel()
	if err != nil {
		return fmt.Errorf("listen: connect: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ReleaseChannel}.Sanitize()); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	connected()
	if o.OnState != nil {
		o.OnState(true)
		defer o.OnState(false)
	}
	for {
		wctx, cancel := context.WithTimeout(ctx, o.Probe)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			if r, ok := parseReleased(n.Payload); ok && o.OnRelease != nil {
				o.OnRelease(r)
			}
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed():
			// Silent for a while: prove the connection is still there.
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err = conn.Ping(pctx)
			cancel()
			if err != nil {
				return fmt.Errorf("listen: probe: %w", err)
			}
		default:
			return fmt.Errorf("listen: %w", err)
		}
	}
}
