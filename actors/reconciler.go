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
	// SymbolsMaxAge is how long a session's symbol specifications are reused: a master's by
	// every reconcile, a follower's by its periodic repairs (default 10 min; symbolCache).
	SymbolsMaxAge time.Duration
	Now           func() time.Time
}

type jobDone struct {
	req        reconcileRequest
	resp       reconcileResponse
	background bool
}

type wake struct{}

// repairWanted registers an account whose periodic repair is due (follower.Ready.
// WantRepair); the Reconciler answers repairTurn when it has room for it.
type repairWanted struct {
	accountID int64
	pid       *actor.PID
}

// repairTurn tells an account that its periodic repair may run now; it answers with a
// reconcileRequest or with repairDeclined.
type repairTurn struct{}

// repairDeclined: the account passed its turn (the repair is no longer due, or it cannot
// reconcile now).
type repairDeclined struct{ accountID int64 }

// grantTimeout frees a turn whose account never answered (it stopped meanwhile).
const grantTimeout = 10 * time.Second

// reconcileExpedite asks the Reconciler to start an account's background reconcile
// ahead of the other background ones, if it has not started yet (follower.Ready.Expedite).
type reconcileExpedite struct{ accountID int64 }

// reconcilePrioritize asks the Reconciler to start an account's waiting reconcile ahead
// of every other: a stop-out waits for it (follower.Ready.Prioritize).
type reconcilePrioritize struct{ accountID int64 }

// reconciler is the actor that runs reconciles with bounded concurrency and a start rate;
// a second request for an account still waiting replaces the first (they coalesce).
//
// Periodic repairs do not queue as reconciles: an account whose repair is due registers
// (repairWanted) and goes on copying; when no other reconcile waits and background work
// holds less than half the concurrency, the Reconciler gives the next account its turn
// (repairTurn) and the account asks for the reconcile, which starts at once. An account
// is thus "reconciling" only while its repair runs, never for the seconds a burst of
// thousands of due repairs takes to drain, during which each of its masters' events
// would wait for it and then for a chained reconcile. A periodic request that comes
// without a turn waits in the background lane, and is expedited to the front lane when
// something waits for it.
type reconciler struct {
	cfg reconcilerConfig
	// protection is the lane ahead of all: reconciles a stop-out (or its end) waits for,
	// whose closes must not queue behind the copies and repairs of other accounts.
	protection []int64
	urgent     []int64 // account ids; an id whose pending entry is gone or moved is skipped
	background []int64
	pending    map[int64]pendingReconcile
	running    int
	runningBg  int // of running: background jobs, at most half the concurrency
	wants      []repairWanted
	wanted     map[int64]bool      // accounts in wants
	granted    map[int64]time.Time // turns given and not answered yet, by account
	tokens     float64
	last       time.Time
	wakeSet    bool
	coalesced  int
	symbols    *symbolCache // shared by the jobs
}

// pendingReconcile is a request waiting to start, and its lane.
type pendingReconcile struct {
	req        reconcileRequest
	background bool
	protection bool // in the protection lane (never also background)
	turn       bool // a periodic repair on its turn: front lane, counted as background work
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
		return &reconciler{cfg: cfg, pending: map[int64]pendingReconcile{}, tokens: float64(cfg.Concurrency),
			wanted: map[int64]bool{}, granted: map[int64]time.Time{}, symbols: newSymbolCache(cfg.SymbolsMaxAge, cfg.Now)}
	}
}

// Receive implements actor.Actor.
func (r *reconciler) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case reconcileRequest:
		r.enqueue(m)
		r.pump(ctx)
	case repairWanted:
		r.want(m)
		r.pump(ctx)
	case repairDeclined:
		delete(r.granted, m.accountID)
		r.pump(ctx)
	case reconcileExpedite:
		if r.expedite(m.accountID) {
			r.pump(ctx)
		}
	case reconcilePrioritize:
		if r.prioritize(m.accountID) {
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
	if m.ask.Cause == follower.CauseProtection {
		r.enqueueProtection(m)
		return
	}
	background := m.ask.Cause == follower.CausePeriodic
	_, turn := r.granted[m.accountID]
	turn = turn && background
	if turn {
		delete(r.granted, m.accountID)
		background = false // its turn: it starts next, like the front lane
	}
	p, waiting := r.pending[m.accountID]
	if waiting && p.protection {
		r.enqueueProtection(m) // it keeps its place in the protection lane
		return
	}
	if waiting {
		r.coalesced++
		background = background && p.background
		if p.background && !background {
			r.urgent = append(r.urgent, m.accountID)
		}
		r.pending[m.accountID] = pendingReconcile{req: m, background: background, turn: turn && p.turn}
		return
	}
	r.pending[m.accountID] = pendingReconcile{req: m, background: background, turn: turn}
	if background {
		r.background = append(r.background, m.accountID)
	} else {
		r.urgent = append(r.urgent, m.accountID)
	}
}

// enqueueProtection adds a protection request to the protection lane, or replaces the
// request the account has waiting and moves it there.
func (r *reconciler) enqueueProtection(m reconcileRequest) {
	p, waiting := r.pending[m.accountID]
	if waiting {
		r.coalesced++
	}
	if !waiting || !p.protection {
		r.protection = append(r.protection, m.accountID)
	}
	r.pending[m.accountID] = pendingReconcile{req: m, protection: true}
}

// prioritize moves an account's waiting request to the protection lane; false when it
// has none (started already) or it is there already.
func (r *reconciler) prioritize(id int64) bool {
	p, ok := r.pending[id]
	if !ok || p.protection {
		return false
	}
	r.pending[id] = pendingReconcile{req: p.req, protection: true}
	r.protection = append(r.protection, id)
	return true
}

// expedite moves an account's waiting background request to the front lane; false when
// it has none (started already, or not a background one).
func (r *reconciler) expedite(id int64) bool {
	p, ok := r.pending[id]
	if !ok || !p.background || p.protection {
		return false
	}
	p.background = false
	r.pending[id] = p
	r.urgent = append(r.urgent, id)
	return true
}

// next takes the next request to start: the protection lane first, then the front lane,
// then the background one while background jobs hold less than half the concurrency (the
// other half is kept for the front lane, so a copy never waits for a slot behind
// repairs). Ids left behind by a move or an earlier start are dropped on the way.
func (r *reconciler) next() (req reconcileRequest, background, ok bool) {
	lanes := []*[]int64{&r.protection, &r.urgent}
	if r.bgRoom() {
		lanes = append(lanes, &r.background)
	}
	for _, lane := range lanes {
		background, protection := lane == &r.background, lane == &r.protection
		for len(*lane) > 0 {
			id := (*lane)[0]
			*lane = (*lane)[1:]
			if p, ok := r.pending[id]; ok && p.background == background && p.protection == protection {
				delete(r.pending, id)
				return p.req, background || p.turn, true
			}
		}
	}
	return reconcileRequest{}, false, false
}

// want registers an account's due repair once; a repeated want (a restarted actor of the
// account) keeps its place and takes the newest actor.
func (r *reconciler) want(m repairWanted) {
	if !r.wanted[m.accountID] {
		r.wanted[m.accountID] = true
		r.wants = append(r.wants, m)
		return
	}
	for i := range r.wants {
		if r.wants[i].accountID == m.accountID {
			r.wants[i].pid = m.pid
		}
	}
}

// bgRoom reports whether background work (running repairs and turns given) holds less
// than half the concurrency.
func (r *reconciler) bgRoom() bool {
	return r.runningBg+len(r.granted) < max(1, r.cfg.Concurrency/2)
}

// grant gives the next wanted repairs their turns while nothing else waits and
// background work has room. A turn takes no token: the reconcile it leads to does.
func (r *reconciler) grant(ctx actor.Context, now time.Time) {
	for id, at := range r.granted {
		if now.Sub(at) > grantTimeout {
			delete(r.granted, id)
		}
	}
	for len(r.wants) > 0 && len(r.urgent) == 0 && len(r.protection) == 0 && r.bgRoom() {
		w := r.wants[0]
		r.wants = r.wants[1:]
		delete(r.wanted, w.accountID)
		r.granted[w.accountID] = now
		if ctx != nil {
			ctx.Send(w.pid, repairTurn{})
		}
	}
}

// pump starts queued jobs while concurrency and the token bucket allow.
func (r *reconciler) pump(ctx actor.Context) {
	now := time.Now()
	if !r.last.IsZero() {
		r.tokens = min(float64(r.cfg.Concurrency), r.tokens+now.Sub(r.last).Seconds()*r.cfg.RatePerSec)
	}
	r.last = now
	defer r.grant(ctx, now)
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
			break
		}
		r.tokens--
		r.running++
		if background {
			r.runningBg++
		}
		self, root, cfg, symbols := ctx.Self(), ctx.ActorSystem().Root, r.cfg, r.symbols
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
				resp = runReconcile(jctx, req, started, symbols)
			}()
			resp.started, resp.finished = started, cfg.Now()
			root.Send(self, jobDone{req: req, resp: resp, background: background})
		}()
	}
}

// runReconcile fetches the follower and its masters and plans every link: the
// Reconciler's job. A master's symbol specifications come from symbols whenever they are
// fresh enough (a plan reads only their fixed parts, contract sizes: the master's session
// is shared by its followers on this node, so a takeover of a thousand followers reads its
// list once). The follower's are taken from symbols by a periodic repair only; a reconcile
// of any other cause reads them, plans with their quotes, and then keeps the map that
// symbols shares among the accounts of the same server. The follower's quotes in reused
// specifications are as old as their reading: where a plan waits for a current quote (a
// late copy under a price-deviation bound), the follower's specifications are read again
// and every link planned anew.
func runReconcile(ctx context.Context, req reconcileRequest, now time.Time, symbols *symbolCache) reconcileResponse {
	resp := reconcileResponse{accountID: req.accountID, Reconciled: follower.Reconciled{
		Masters: map[int64]reconcile.AccountState{}, Plans: map[int64]reconcile.Result{}}}
	reuse := req.ask.Cause == follower.CausePeriodic
	var err error
	var read bool // the follower's specifications were read by this reconcile
	if resp.Follower, read, err = fetchState(ctx, req.follower, symbols, reuse, now); err != nil {
		resp.Err = fmt.Errorf("follower %d: %w", req.accountID, err)
		return resp
	}
	for _, l := range req.ask.Links {
		if _, ok := resp.Masters[l.MasterID]; ok {
			continue
		}
		sess := req.masters[l.MasterID]
		if sess == nil {
			resp.Err = fmt.Errorf("master %d: no session", l.MasterID)
			return resp
		}
		ms, read, err := fetchState(ctx, sess, symbols, true, now)
		if err != nil {
			resp.Err = fmt.Errorf("master %d: %w", l.MasterID, err)
			return resp
		}
		if read {
			ms.Symbols, ms.QuotesAt = symbols.share(sess, ms.Symbols, ms.QuotesAt)
		}
		resp.Masters[l.MasterID] = ms
	}
	// planAll plans every link and reports whether a plan waits for a current quote.
	planAll := func() (needsQuote bool) {
		for _, l := range req.ask.Links {
			res := reconcile.Plan(reconcile.Input{Master: resp.Masters[l.MasterID], Follower: resp.Follower, Link: l.Link, TicketMap: l.TicketMap, Now: now,
				MasterClock: l.MasterClock})
			resp.Plans[l.Link.ID] = res
			needsQuote = needsQuote || res.NeedsQuote()
		}
		return needsQuote
	}
	if planAll() && !read {
		if resp.Follower.Symbols, err = fetchSymbols(ctx, req.follower); err != nil {
			resp.Err = fmt.Errorf("follower %d: %w", req.accountID, err)
			return resp
		}
		resp.Follower.QuotesAt, read = now, true
		planAll()
	}
	if read {
		resp.Follower.Symbols, resp.Follower.QuotesAt = symbols.share(req.follower, resp.Follower.Symbols, resp.Follower.QuotesAt)
	}
	return resp
}

// fetchState reads an account from its session: its account information and positions
// always, its symbol specifications unless reuse is set and symbols has them fresh
// (read reports that they were read). QuotesAt is now for specifications read now (the
// read comes after now: their quotes are at least as recent), else when the reused ones'
// quotes were read.
func fetchState(ctx context.Context, s broker.Session, symbols *symbolCache, reuse bool, now time.Time) (st reconcile.AccountState, read bool, err error) {
	if st.Info, err = s.Account(ctx); err != nil {
		return st, false, err
	}
	if st.Positions, err = s.Positions(ctx); err != nil {
		return st, false, err
	}
	if reuse {
		if specs, at, ok := symbols.get(s); ok {
			st.Symbols, st.QuotesAt = specs, at
			return st, false, nil
		}
	}
	st.Symbols, err = fetchSymbols(ctx, s)
	st.QuotesAt = now
	return st, err == nil, err
}

// fetchSymbols reads a session's symbol specifications, by name.
func fetchSymbols(ctx context.Context, s broker.Session) (map[string]broker.SymbolSpec, error) {
	specs, err := s.Symbols(ctx)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]broker.SymbolSpec, len(specs))
	for _, sp := range specs {
		byName[sp.Name] = sp
	}
	return byName, nil
}
