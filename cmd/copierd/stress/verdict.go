package stress

import (
	"context"
	"fmt"
	"time"

	"github.com/snapcopier/copier/broker"
)

// converge waits for the quiet period, then until every follower is in line and owned
// in two checks in a row, or until the convergence bound passes.
func (r *runner) converge(ctx context.Context, loadEnd time.Time) (bool, float64) {
	quietUntil := loadEnd.Add(r.o.Quiet)
	deadline := loadEnd.Add(r.o.Converge)
	streak := 0
	for {
		now := time.Now()
		if !now.Before(quietUntil) {
			free, ferr := r.unowned(ctx)
			pr, perr := r.checkPositions(ctx)
			if ferr == nil && perr == nil && free == 0 && pr.Clean() {
				streak++
				if streak >= 2 {
					s := round3(time.Since(loadEnd).Seconds())
					r.logf("converged %.1fs after the load stopped", s)
					return true, s
				}
			} else {
				streak = 0
				r.logf("converging: %d unowned, duplicates %d, missing %d, orphans %d, unidentified %d (%v %v)",
					free, pr.Duplicates, pr.Missing, pr.Orphans, pr.Unidentified, ferr, perr)
			}
		}
		if now.After(deadline) {
			r.logf("not converged %v after the load stopped", r.o.Converge)
			return false, round3(time.Since(loadEnd).Seconds())
		}
		if !sleepCtx(ctx, time.Second) {
			return false, round3(time.Since(loadEnd).Seconds())
		}
	}
}

// positions reads every account's open positions from the simulator.
func (r *runner) positions(ctx context.Context) (map[string][]broker.Position, error) {
	out := make(map[string][]broker.Position, len(r.masters)+len(r.followers))
	for _, list := range [][]account{r.masters, r.followers} {
		for _, a := range list {
			ps, err := r.sim.AccountPositions(ctx, a.login)
			if err != nil {
				return nil, err
			}
			out[a.login] = ps
		}
	}
	return out, nil
}

func (r *runner) checkPositions(ctx context.Context) (PositionsResult, error) {
	ps, err := r.positions(ctx)
	if err != nil {
		return PositionsResult{}, err
	}
	return CheckPositions(r.links, ps), nil
}

// finalState is everything the verdict is computed from.
type finalState struct {
	owned     map[string]int // followers per node by the database, before the nodes stop
	orders    []broker.OrderLogEntry
	positions map[string][]broker.Position
	audit     auditResult
	claims    []Claim
}

// collect reads the final state: the order log, the positions, the audit, and a last
// metrics scrape.
func (r *runner) collect(ctx context.Context) (finalState, error) {
	var f finalState
	var err error
	r.sampleOnce(ctx)
	f.owned = r.lastCounts()
	if f.orders, err = r.sim.OrderLog(ctx, 0, 0); err != nil {
		return f, fmt.Errorf("stress: order log: %w", err)
	}
	if f.positions, err = r.positions(ctx); err != nil {
		return f, fmt.Errorf("stress: positions: %w", err)
	}
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if f.audit, err = readAudit(actx, r.pool); err != nil {
		return f, fmt.Errorf("stress: audit: %w", err)
	}
	if f.claims, err = readClaims(actx, r.pool); err != nil {
		return f, fmt.Errorf("stress: audit claims: %w", err)
	}
	r.scrapeAll(ctx)
	return f, nil
}
