package actors

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/reconcile/follower"
)

// reconcileRequest asks the Reconciler to fetch a follower and its masters and plan every
// link of ask. The Reconciler only reads from the sessions; the requester sends the orders.
type reconcileRequest struct {
	accountID int64
	follower  broker.Session
	masters   map[int64]broker.Session // by master account id
	ask       follower.Ask
	replyTo   *actor.PID
}

// reconcileResponse answers a reconcileRequest.
type reconcileResponse struct {
	accountID         int64
	started, finished time.Time // the job's fetch and plan, for Deps.TraceCopies
	follower.Reconciled
}

// reconcilerConfig bounds the Reconciler, so a takeover of thousands of accounts does not
// stampede the trade servers.
type reconcilerConfig struct {
	Concurrency  int           // fetch-and-plan jobs at once (default 16)
	RatePerSec   float64       // jobs started per second (default 200)
	FetchTimeout time.Duration // per job (default 15 s)
	Now          func() time.Time
}

type jobDone struct {
	req        reconcileRequest
	resp       reconcileResponse
	background bool
}

type wake struct{}

// reconcileExpedite asks the Reconciler to start an account's background reconcile
// ahead of the other background ones, if it has not started yet (follower.Ready.Expedite).
type reconcileExpedite struct{ accountID int64 }

// reconciler is the actor that runs reconciles with bounded concurrency and a start rate;
// a second request for an account still waiting replaces the first (they coalesce).
//
// It keeps two lanes. Background repairs (periodic) wait in their own lane and start only
// when no other reconcile waits: thousands of accounts' periodic repairs must never hold
// up the reconcile that copies a master's trade. A background request that something
// now waits for is expedited to the front lane.
type reconciler struct {
	cfg        reconcilerConfig
	urgent     []int64 // account ids; an id whose pending entry is gone or moved is skipped
	background []int64
	pending    map[int64]pendingReconcile
	running    int
	runningBg  int // of running: background jobs, at most half the concurrency
	tokens     float64
	last       time.Time
	wakeSet    bool
	coalesced  int
}

// pendingReconcile is a request waiting to start, and its lane.
type pendingReconcile struct {
	req        reconcileRequest
	background bool
}

// newReconciler returns the Reconciler actor's producer.
func newReconciler(cfg reconcilerConfig) actor.Producer {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 16
	}
	if cfg.RatePerSec <= 0 {
		cfg.RatePerSec = 200
	}
	if cfg.FetchTimeout <= 0 {
		cfg.FetchTimeout = 15 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return func() actor.Actor {
		return &reconciler{cfg: cfg, pending: map[int64]pendingReconcile{}, tokens: float64(cfg.Concurrency)}
	}
}

// Receive implements actor.Actor.
func (r *reconciler) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case reconcileRequest:
		r.enqueue(m)
		r.pump(ctx)
	case reconcileExpedite:
		if r.expedite(m.accountID) {
			r.pump(ctx)
		}
	case jobDone:
		r.running--
		if m.background {
			r.runningBg--
		}
		if m.req.replyTo != nil {
			ctx.Send(m.req.replyTo, m.resp)
		}
		r.pump(ctx)
	case wake:
		r.wakeSet = false
		r.pump(ctx)
	}
}

// enqueue adds a request to its lane, or replaces the one the account has waiting (which
// moves to the front lane when the new one belongs there).
func (r *reconciler) enqueue(m reconcileRequest) {
	background := m.ask.Cause == follower.CausePeriodic
	if p, waiting := r.pending[m.accountID]; waiting {
		r.coalesced++
		background = background && p.background
		if p.background && !background {
			r.urgent = append(r.urgent, m.accountID)
		}
		r.pending[m.accountID] = pendingReconcile{req: m, background: background}
		return
	}
	r.pending[m.accountID] = pendingReconcile{req: m, background: background}
	if background {
		r.background = append(r.background, m.accountID)
	} else {
		r.urgent = append(r.urgent, m.accountID)
	}
}

// expedite moves an account's waiting background request to the front lane; false when
// it has none (started already, or not a background one).
func (r *reconciler) expedite(id int64) bool {
	p, ok := r.pending[id]
	if !ok || !p.background {
		return false
	}
	p.background = false
	r.pending[id] = p
	r.urgent = append(r.urgent, id)
	return true
}

// next takes the next request to start: the front lane first, then the background one
// while background jobs hold less than half the concurrency (the other half is kept for
// the front lane, so a copy never waits for a slot behind repairs). Ids left behind by a
// move or an earlier start are dropped on the way.
func (r *reconciler) next() (req reconcileRequest, background, ok bool) {
	lanes := []*[]int64{&r.urgent}
	if r.runningBg < max(1, r.cfg.Concurrency/2) {
		lanes = append(lanes, &r.background)
	}
	for _, lane := range lanes {
		background := lane == &r.background
		for len(*lane) > 0 {
			id := (*lane)[0]
			*lane = (*lane)[1:]
			if p, ok := r.pending[id]; ok && p.background == background {
				delete(r.pending, id)
				return p.req, background, true
			}
		}
	}
	return reconcileRequest{}, false, false
}

// pump starts queued jobs while concurrency and the token bucket allow.
func (r *reconciler) pump(ctx actor.Context) {
	now := time.Now()
	if !r.last.IsZero() {
		r.tokens = min(float64(r.cfg.Concurrency), r.tokens+now.Sub(r.last).Seconds()*r.cfg.RatePerSec)
	}
	r.last = now
	for len(r.pending) > 0 && r.running < r.cfg.Concurrency {
		if r.tokens < 1 {
			if !r.wakeSet {
				r.wakeSet = true
				self, root := ctx.Self(), ctx.ActorSystem().Root
				wait := time.Duration((1 - r.tokens) / r.cfg.RatePerSec * float64(time.Second))
				time.AfterFunc(wait, func() { root.Send(self, wake{}) })
			}
			return
		}
		req, background, ok := r.next()
		if !ok {
			return
		}
		r.tokens--
		r.running++
		if background {
			r.runningBg++
		}
		self, root, cfg := ctx.Self(), ctx.ActorSystem().Root, r.cfg
		go func() {
			jctx, cancel := context.WithTimeout(context.Background(), cfg.FetchTimeout)
			defer cancel()
			resp := reconcileResponse{accountID: req.accountID}
			started := cfg.Now()
			func() {
				// A panic in a broker implementation must fail one job, not the process.
				defer func() {
					if r := recover(); r != nil {
						resp.Err = fmt.Errorf("reconcile of account %d panicked: %v", req.accountID, r)
					}
				}()
				resp = runReconcile(jctx, req, started)
			}()
			resp.started, resp.finished = started, cfg.Now()
			root.Send(self, jobDone{req: req, resp: resp, background: background})
		}()
	}
}

// runReconcile fetches the follower and its masters and plans every link: the
// Reconciler's job.
func runReconcile(ctx context.Context, req reconcileRequest, now time.Time) reconcileResponse {
	resp := reconcileResponse{accountID: req.accountID, Reconciled: follower.Reconciled{
		Masters: map[int64]reconcile.AccountState{}, Plans: map[int64]reconcile.Result{}}}
	var err error
	if resp.Follower, err = fetchState(ctx, req.follower); err != nil {
		resp.Err = fmt.Errorf("follower %d: %w", req.accountID, err)
		return resp
	}
	for _, l := range req.ask.Links {
		ms, ok := resp.Masters[l.MasterID]
		if !ok {
			sess := req.masters[l.MasterID]
			if sess == nil {
				resp.Err = fmt.Errorf("master %d: no session", l.MasterID)
				return resp
			}
			if ms, err = fetchState(ctx, sess); err != nil {
				resp.Err = fmt.Errorf("master %d: %w", l.MasterID, err)
				return resp
			}
			resp.Masters[l.MasterID] = ms
		}
		resp.Plans[l.Link.ID] = reconcile.Plan(reconcile.Input{Master: ms, Follower: resp.Follower, Link: l.Link, TicketMap: l.TicketMap, Now: now})
	}
	return resp
}

func fetchState(ctx context.Context, s broker.Session) (reconcile.AccountState, error) {
	var st reconcile.AccountState
	var err error
	if st.Info, err = s.Account(ctx); err != nil {
		return st, err
	}
	if st.Positions, err = s.Positions(ctx); err != nil {
		return st, err
	}
	specs, err := s.Symbols(ctx)
	if err != nil {
		return st, err
	}
	st.Symbols = make(map[string]broker.SymbolSpec, len(specs))
	for _, sp := range specs {
		st.Symbols[sp.Name] = sp
	}
	return st, nil
}
