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
	accountID int64
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
	req  reconcileRequest
	resp reconcileResponse
}

type wake struct{}

// reconciler is the actor that runs reconciles with bounded concurrency and a start rate;
// a second request for an account still waiting replaces the first (they coalesce).
type reconciler struct {
	cfg       reconcilerConfig
	queue     []int64
	pending   map[int64]reconcileRequest
	running   int
	tokens    float64
	last      time.Time
	wakeSet   bool
	coalesced int
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
		return &reconciler{cfg: cfg, pending: map[int64]reconcileRequest{}, tokens: float64(cfg.Concurrency)}
	}
}

// Receive implements actor.Actor.
func (r *reconciler) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case reconcileRequest:
		if _, waiting := r.pending[m.accountID]; waiting {
			r.coalesced++
		} else {
			r.queue = append(r.queue, m.accountID)
		}
		r.pending[m.accountID] = m
		r.pump(ctx)
	case jobDone:
		r.running--
		if m.req.replyTo != nil {
			ctx.Send(m.req.replyTo, m.resp)
		}
		r.pump(ctx)
	case wake:
		r.wakeSet = false
		r.pump(ctx)
	}
}

// pump starts queued jobs while concurrency and the token bucket allow.
func (r *reconciler) pump(ctx actor.Context) {
	now := time.Now()
	if !r.last.IsZero() {
		r.tokens = min(float64(r.cfg.Concurrency), r.tokens+now.Sub(r.last).Seconds()*r.cfg.RatePerSec)
	}
	r.last = now
	for len(r.queue) > 0 && r.running < r.cfg.Concurrency {
		if r.tokens < 1 {
			if !r.wakeSet {
				r.wakeSet = true
				self, root := ctx.Self(), ctx.ActorSystem().Root
				wait := time.Duration((1 - r.tokens) / r.cfg.RatePerSec * float64(time.Second))
				time.AfterFunc(wait, func() { root.Send(self, wake{}) })
			}
			return
		}
		r.tokens--
		id := r.queue[0]
		r.queue = r.queue[1:]
		req := r.pending[id]
		delete(r.pending, id)
		r.running++
		self, root, cfg := ctx.Self(), ctx.ActorSystem().Root, r.cfg
		go func() {
			jctx, cancel := context.WithTimeout(context.Background(), cfg.FetchTimeout)
			defer cancel()
			resp := reconcileResponse{accountID: req.accountID}
			func() {
				// A panic in a broker implementation must fail one job, not the process.
				defer func() {
					if r := recover(); r != nil {
						resp.Err = fmt.Errorf("reconcile of account %d panicked: %v", req.accountID, r)
					}
				}()
				resp = runReconcile(jctx, req, cfg.Now())
			}()
			root.Send(self, jobDone{req: req, resp: resp})
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
