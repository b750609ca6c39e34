package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/snapcopier/copier/broker"
)

// LinkRequest is one link of a follower to plan: its master and the link's ticket map.
type LinkRequest struct {
	MasterID  int64
	Link      Link
	TicketMap []TicketMapEntry
}

// Request asks the Reconciler to fetch a follower and its masters and plan every link.
// The Reconciler only reads from the sessions; the requester sends the orders.
type Request struct {
	AccountID int64
	Follower  broker.Session
	Masters   map[int64]broker.Session // by master account id
	Links     []LinkRequest
	Cause     string
	ReplyTo   *actor.PID
}

// Response answers a Request with what was fetched and a plan per link (by link id).
type Response struct {
	AccountID int64
	Cause     string
	Follower  AccountState
	Masters   map[int64]AccountState
	Plans     map[int64]Result
	Now       time.Time
	Err       error
}

// ReconcilerConfig bounds the Reconciler, so a takeover of thousands of accounts does not
// stampede the trade servers.
type ReconcilerConfig struct {
	Concurrency  int           // fetch-and-plan jobs at once (default 16)
	RatePerSec   float64       // jobs started per second (default 200)
	FetchTimeout time.Duration // per job (default 15 s)
	Now          func() time.Time
}

type jobDone struct {
	req  Request
	resp Response
}

type wake struct{}

// Reconciler is the actor that runs reconciles with bounded concurrency and a start rate;
// a second request for an account still waiting replaces the first (they coalesce).
type Reconciler struct {
	cfg       ReconcilerConfig
	queue     []int64
	pending   map[int64]Request
	running   int
	tokens    float64
	last      time.Time
	wakeSet   bool
	coalesced int
}

// NewReconciler returns the actor's producer.
func NewReconciler(cfg ReconcilerConfig) actor.Producer {
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
		return &Reconciler{cfg: cfg, pending: map[int64]Request{}, tokens: float64(cfg.Concurrency)}
	}
}

// Receive implements actor.Actor.
func (r *Reconciler) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case Request:
		if _, waiting := r.pending[m.AccountID]; waiting {
			r.coalesced++
		} else {
			r.queue = append(r.queue, m.AccountID)
		}
		r.pending[m.AccountID] = m
		r.pump(ctx)
	case jobDone:
		r.running--
		if m.req.ReplyTo != nil {
			ctx.Send(m.req.ReplyTo, m.resp)
		}
		r.pump(ctx)
	case wake:
		r.wakeSet = false
		r.pump(ctx)
	}
}

// pump starts queued jobs while concurrency and the token bucket allow.
func (r *Reconciler) pump(ctx actor.Context) {
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
			resp := Response{AccountID: req.AccountID, Cause: req.Cause}
			func() {
				// A panic in a broker implementation must fail one job, not the process.
				defer func() {
					if r := recover(); r != nil {
						resp.Err = fmt.Errorf("reconcile of account %d panicked: %v", req.AccountID, r)
					}
				}()
				resp = Run(jctx, req, cfg.Now())
			}()
			root.Send(self, jobDone{req: req, resp: resp})
		}()
	}
}

// Run fetches the follower and its masters and plans every link: the Reconciler's job,
// callable directly where no actor is wanted.
func Run(ctx context.Context, req Request, now time.Time) Response {
	resp := Response{AccountID: req.AccountID, Cause: req.Cause, Masters: map[int64]AccountState{}, Plans: map[int64]Result{}, Now: now}
	var err error
	if resp.Follower, err = fetchState(ctx, req.Follower); err != nil {
		resp.Err = fmt.Errorf("follower %d: %w", req.AccountID, err)
		return resp
	}
	for _, l := range req.Links {
		ms, ok := resp.Masters[l.MasterID]
		if !ok {
			sess := req.Masters[l.MasterID]
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
		resp.Plans[l.Link.ID] = Plan(Input{Master: ms, Follower: resp.Follower, Link: l.Link, TicketMap: l.TicketMap, Now: now})
	}
	return resp
}

func fetchState(ctx context.Context, s broker.Session) (AccountState, error) {
	var st AccountState
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
