package stress

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/google/uuid"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile"
)

// This file is the checker: pure functions of the simulator's order log, the final
// positions and the fault log. Nothing here reads a clock, a database or a process.

// Period is one sender's sending period for one follower: the first and the last order
// one node sent with one token (lease epoch).
type Period struct {
	Node   string    `json:"node"`
	Token  int64     `json:"token"`
	First  time.Time `json:"first"`
	Last   time.Time `json:"last"`
	Orders int       `json:"orders"`
}

// Freeze is a SIGSTOP of a node process, from the stop to the SIGCONT.
type Freeze struct {
	Node  string    `json:"node"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// OverlapInput is what CheckOverlaps looks at.
type OverlapInput struct {
	// Orders is the simulator's order log (master trades are ignored).
	Orders []broker.OrderLogEntry
	// LongFreezes are the freezes longer than the fence: the only thing that may explain
	// an overlap.
	LongFreezes []Freeze
	// Slack is how long after a freeze ends an order that passed the gate before it may
	// still reach the server.
	Slack time.Duration
	// EnforceTokens reports whether the simulator rejected stale tokens during the run.
	EnforceTokens bool
	// Claims are the claims of followers from the audit table, with the times they were
	// made in the database. Any order for a follower executed after a claim of it with a
	// newer epoch than the order's token is a late order: an overlap, even when the new
	// owner never sent anything.
	Claims []Claim
}

// Claim is one claim of a follower: the node took it with a new epoch at At (the
// database's clock, which on one machine is the simulator's).
type Claim struct {
	Follower string    `json:"follower"` // login
	Node     string    `json:"node"`
	Epoch    int64     `json:"epoch"`
	At       time.Time `json:"at"`
}

// LateOrder is an order that reached the server after a newer claim of its follower.
type LateOrder struct {
	Follower  string    `json:"follower"`
	Node      string    `json:"node"`
	Token     int64     `json:"token"`
	At        time.Time `json:"at"`
	Claim     Claim     `json:"claim"` // the earliest newer claim before the order
	Executed  bool      `json:"executed"`
	Explained bool      `json:"explained"` // inside a freeze longer than the fence of its node
}

// Overlap is a pair of sending periods for one follower that overlap in time. The period
// with the lower token is the stale one.
type Overlap struct {
	Follower string `json:"follower"`
	Stale    Period `json:"stale"`
	Fresh    Period `json:"fresh"`
	// StaleOrders are the stale period's orders at or after the fresh period's first.
	StaleOrders int `json:"stale_orders"`
	// StaleRejected of them were refused for their token (CodeFencedToken).
	StaleRejected int `json:"stale_rejected"`
	// StaleExecuted of them changed the account.
	StaleExecuted int `json:"stale_executed"`
	// StaleExecutedAfterFresh of them executed after the fresh sender's first executed
	// order: a broker that enforces tokens must have refused every one of these.
	StaleExecutedAfterFresh int `json:"stale_executed_after_fresh"`
	// Explained is true when every stale order lies inside a long freeze of the stale
	// node (from its SIGSTOP to Slack after its SIGCONT).
	Explained bool   `json:"explained"`
	Reason    string `json:"reason"`
}

// OverlapResult summarises CheckOverlaps.
type OverlapResult struct {
	Overlaps    []Overlap `json:"overlaps,omitempty"`
	Total       int       `json:"total"`
	Explained   int       `json:"explained_by_long_freeze"`
	Unexplained int       `json:"unexplained"`
	// StaleOrders, StaleRejected and StaleExecuted sum the explained overlaps.
	StaleOrders   int `json:"stale_orders"`
	StaleRejected int `json:"stale_rejected"`
	StaleExecuted int `json:"stale_executed"`
	// EnforcementViolations are stale orders that executed after the fresh sender's first
	// executed order while token enforcement was on (must be 0).
	EnforcementViolations int `json:"enforcement_violations"`
	// Senders is the number of (follower, node, token) sending periods seen.
	Senders int `json:"senders"`
	// LateOrders reached the server after a newer claim of their follower; LateRefused
	// of them were refused for their token or deadline, LateExecuted executed (each an
	// overlap), LateUnexplained of those outside any freeze longer than the fence.
	LateOrders      int         `json:"late_orders"`
	LateRefused     int         `json:"late_refused"`
	LateExecuted    int         `json:"late_executed"`
	LateUnexplained int         `json:"late_unexplained"`
	Late            []LateOrder `json:"late,omitempty"` // the executed ones
}

type senderKey struct {
	node  string
	token int64
}

type senderOrders struct {
	period Period
	orders []broker.OrderLogEntry // in log order
}

// CheckOverlaps finds, for every follower, the pairs of sending periods (one node, one
// token) that overlap, and classifies each: explained by a freeze longer than the fence of
// the stale sender, or not. Periods include every order a node sent, executed or not.
func CheckOverlaps(in OverlapInput) OverlapResult {
	byFollower := map[string]map[senderKey]*senderOrders{}
	for _, e := range in.Orders {
		if e.Master || e.Node == "" {
			continue
		}
		m := byFollower[e.Login]
		if m == nil {
			m = map[senderKey]*senderOrders{}
			byFollower[e.Login] = m
		}
		k := senderKey{e.Node, e.Token}
		s := m[k]
		if s == nil {
			s = &senderOrders{period: Period{Node: e.Node, Token: e.Token, First: e.ServerTime, Last: e.ServerTime}}
			m[k] = s
		}
		if e.ServerTime.Before(s.period.First) {
			s.period.First = e.ServerTime
		}
		if e.ServerTime.After(s.period.Last) {
			s.period.Last = e.ServerTime
		}
		s.period.Orders++
		s.orders = append(s.orders, e)
	}
	freezes := map[string][]Freeze{}
	for _, f := range in.LongFreezes {
		freezes[f.Node] = append(freezes[f.Node], f)
	}

	var res OverlapResult
	followers := make([]string, 0, len(byFollower))
	for f := range byFollower {
		followers = append(followers, f)
	}
	sort.Strings(followers)
	for _, follower := range followers {
		senders := make([]*senderOrders, 0, len(byFollower[follower]))
		for _, s := range byFollower[follower] {
			senders = append(senders, s)
		}
		res.Senders += len(senders)
		slices.SortFunc(senders, func(a, b *senderOrders) int {
			if c := a.period.First.Compare(b.period.First); c != 0 {
				return c
			}
			if c := cmp.Compare(a.period.Token, b.period.Token); c != 0 {
				return c
			}
			return cmp.Compare(a.period.Node, b.period.Node)
		})
		for i := range senders {
			for j := i + 1; j < len(senders); j++ {
				a, b := senders[i], senders[j]
				if b.period.First.After(a.period.Last) {
					break // sorted by First: no later period starts before a ends
				}
				ov := classify(follower, a, b, freezes, in)
				res.Overlaps = append(res.Overlaps, ov)
			}
		}
	}
	for _, ov := range res.Overlaps {
		res.Total++
		if ov.Explained {
			res.Explained++
			res.StaleOrders += ov.StaleOrders
			res.StaleRejected += ov.StaleRejected
			res.StaleExecuted += ov.StaleExecuted
		} else {
			res.Unexplained++
		}
		if in.EnforceTokens {
			res.EnforcementViolations += ov.StaleExecutedAfterFresh
		}
	}
	checkLate(in, freezes, &res)
	return res
}

// checkLate finds the orders that reached the server after a claim of their follower with
// an epoch above their token. Refused ones (token or deadline) are what the fence is for;
// an executed one is an overlap, explained only by a freeze longer than the fence.
func checkLate(in OverlapInput, freezes map[string][]Freeze, res *OverlapResult) {
	claims := map[string][]Claim{}
	for _, c := range in.Claims {
		claims[c.Follower] = append(claims[c.Follower], c)
	}
	for _, cs := range claims {
		slices.SortFunc(cs, func(a, b Claim) int { return a.At.Compare(b.At) })
	}
	for _, e := range in.Orders {
		if e.Master || e.Node == "" {
			continue
		}
		var newer *Claim
		for i, c := range claims[e.Login] {
			if !c.At.Before(e.ServerTime) {
				break
			}
			if c.Epoch > e.Token {
				newer = &claims[e.Login][i]
				break
			}
		}
		if newer == nil {
			continue
		}
		res.LateOrders++
		switch {
		case e.Executed:
			res.LateExecuted++
			late := LateOrder{Follower: e.Login, Node: e.Node, Token: e.Token, At: e.ServerTime, Claim: *newer, Executed: true,
				Explained: inFreeze(freezes[e.Node], e.ServerTime, in.Slack)}
			if !late.Explained {
				res.LateUnexplained++
			}
			res.Late = append(res.Late, late)
		case e.Result == broker.CodeFencedToken || e.Result == broker.CodeExpired:
			res.LateRefused++
		}
	}
}

// classify describes the overlap of two sending periods of one follower.
func classify(follower string, a, b *senderOrders, freezes map[string][]Freeze, in OverlapInput) Overlap {
	stale, fresh := a, b
	if b.period.Token < a.period.Token {
		stale, fresh = b, a
	}
	ov := Overlap{Follower: follower, Stale: stale.period, Fresh: fresh.period}
	var firstFreshExecuted time.Time
	for _, e := range fresh.orders {
		if e.Executed && (firstFreshExecuted.IsZero() || e.ServerTime.Before(firstFreshExecuted)) {
			firstFreshExecuted = e.ServerTime
		}
	}
	explained := true
	for _, e := range stale.orders {
		if e.ServerTime.Before(fresh.period.First) {
			continue
		}
		ov.StaleOrders++
		if e.Result == broker.CodeFencedToken {
			ov.StaleRejected++
		}
		if e.Executed {
			ov.StaleExecuted++
			if !firstFreshExecuted.IsZero() && e.ServerTime.After(firstFreshExecuted) {
				ov.StaleExecutedAfterFresh++
			}
		}
		if !inFreeze(freezes[stale.period.Node], e.ServerTime, in.Slack) {
			explained = false
		}
	}
	switch {
	case stale.period.Token == fresh.period.Token:
		ov.Reason = fmt.Sprintf("two senders with one token %d (%s and %s)", stale.period.Token, stale.period.Node, fresh.period.Node)
	case ov.StaleOrders == 0:
		ov.Explained = true // nothing was sent late: harmless
		ov.Reason = "no stale order after the fresh sender began"
	case explained:
		ov.Explained = true
		ov.Reason = fmt.Sprintf("%d stale orders from %s, all inside a freeze longer than the fence", ov.StaleOrders, stale.period.Node)
	default:
		ov.Reason = fmt.Sprintf("%d stale orders from %s (token %d) while %s (token %d) was sending, not explained by a freeze",
			ov.StaleOrders, stale.period.Node, stale.period.Token, fresh.period.Node, fresh.period.Token)
	}
	return ov
}

func inFreeze(fs []Freeze, t time.Time, slack time.Duration) bool {
	for _, f := range fs {
		if !t.Before(f.Start) && !t.After(f.End.Add(slack)) {
			return true
		}
	}
	return false
}

// CheckLink is one copy link as the checker sees it.
type CheckLink struct {
	Master   string `json:"master"`   // master login
	Follower string `json:"follower"` // follower login
	Magic    int64  `json:"magic"`
}

// PositionIssue is one follower position (or missing one) out of line.
type PositionIssue struct {
	Follower       string `json:"follower"`
	Master         string `json:"master,omitempty"`
	MasterTicket   int64  `json:"master_ticket,omitempty"`
	FollowerTicket int64  `json:"follower_ticket,omitempty"`
	Detail         string `json:"detail"`
}

// PositionsResult compares every follower's copies with its masters' open positions.
type PositionsResult struct {
	Followers       int `json:"followers"`
	MasterPositions int `json:"master_positions"`
	Copies          int `json:"copies"`
	// Duplicates counts extra copies: two copies of one master position count one.
	Duplicates int `json:"duplicates"`
	// Missing counts open master positions without their copy on a linked follower.
	Missing int `json:"missing"`
	// Orphans counts copies left open whose master position is closed.
	Orphans int `json:"orphans"`
	// Unidentified counts positions with a link's magic number but no readable marker.
	Unidentified int `json:"unidentified"`
	// Foreign counts follower positions with a magic number of none of its links.
	Foreign int             `json:"foreign"`
	Issues  []PositionIssue `json:"issues,omitempty"` // the first MaxIssues
}

// MaxIssues bounds the issues a result lists.
const MaxIssues = 50

// Clean reports whether no follower is out of line.
func (r PositionsResult) Clean() bool {
	return r.Duplicates == 0 && r.Missing == 0 && r.Orphans == 0 && r.Unidentified == 0 && r.Foreign == 0
}

// Missed is the number of missed copies: open master positions without their copy and
// copies left open whose master position closed.
func (r PositionsResult) Missed() int { return r.Missing + r.Orphans + r.Unidentified }

// CheckPositions compares the final positions: every open master position must have
// exactly one copy (the link's magic number and the mc<ticket> marker) on every follower
// linked to it, and no copy may outlive its master position. The stress links copy
// everything (no filters, any age, force_min sizing), so there are no legitimate skips.
func CheckPositions(links []CheckLink, positions map[string][]broker.Position) PositionsResult {
	var res PositionsResult
	issue := func(i PositionIssue) {
		if len(res.Issues) < MaxIssues {
			res.Issues = append(res.Issues, i)
		}
	}
	byFollower := map[string][]CheckLink{}
	masters := map[string]map[int64]broker.Position{}
	for _, l := range links {
		byFollower[l.Follower] = append(byFollower[l.Follower], l)
		if masters[l.Master] == nil {
			open := map[int64]broker.Position{}
			for _, p := range positions[l.Master] {
				open[p.Ticket] = p
			}
			masters[l.Master] = open
			res.MasterPositions += len(open)
		}
	}
	followers := make([]string, 0, len(byFollower))
	for f := range byFollower {
		followers = append(followers, f)
	}
	sort.Strings(followers)
	res.Followers = len(followers)
	for _, f := range followers {
		fl := byFollower[f]
		magics := map[int64]CheckLink{}
		for _, l := range fl {
			magics[l.Magic] = l
		}
		copies := map[int64]map[int64][]broker.Position{} // magic → master ticket → copies
		for _, p := range positions[f] {
			res.Copies++
			l, ok := magics[p.Magic]
			if !ok {
				res.Foreign++
				issue(PositionIssue{Follower: f, FollowerTicket: p.Ticket, Detail: fmt.Sprintf("magic %d belongs to none of the follower's links", p.Magic)})
				continue
			}
			t, ok := reconcile.ParseMarker(p.Comment)
			if !ok {
				res.Unidentified++
				issue(PositionIssue{Follower: f, Master: l.Master, FollowerTicket: p.Ticket, Detail: fmt.Sprintf("no copy marker in comment %q", p.Comment)})
				continue
			}
			if copies[p.Magic] == nil {
				copies[p.Magic] = map[int64][]broker.Position{}
			}
			copies[p.Magic][t] = append(copies[p.Magic][t], p)
		}
		for _, l := range fl {
			open := masters[l.Master]
			mine := copies[l.Magic]
			tickets := make([]int64, 0, len(mine))
			for t := range mine {
				tickets = append(tickets, t)
			}
			slices.Sort(tickets)
			for _, t := range tickets {
				cs := mine[t]
				if _, ok := open[t]; !ok {
					res.Orphans += len(cs)
					for _, c := range cs {
						issue(PositionIssue{Follower: f, Master: l.Master, MasterTicket: t, FollowerTicket: c.Ticket, Detail: "copy open, master position closed"})
					}
					continue
				}
				if len(cs) > 1 {
					res.Duplicates += len(cs) - 1
					issue(PositionIssue{Follower: f, Master: l.Master, MasterTicket: t, FollowerTicket: cs[1].Ticket, Detail: fmt.Sprintf("%d copies of one master position", len(cs))})
				}
			}
			openTickets := make([]int64, 0, len(open))
			for t := range open {
				openTickets = append(openTickets, t)
			}
			slices.Sort(openTickets)
			for _, t := range openTickets {
				if len(mine[t]) == 0 {
					res.Missing++
					issue(PositionIssue{Follower: f, Master: l.Master, MasterTicket: t, Detail: "master position open, no copy"})
				}
			}
		}
	}
	return res
}

// LatencyResult summarises copy latencies: master event to the follower's order, both by
// the trade server's clock.
type LatencyResult struct {
	Samples   int     `json:"samples"`
	Unmatched int     `json:"unmatched"` // master event and linked follower without a matching order
	P50ms     float64 `json:"p50_ms"`
	P99ms     float64 `json:"p99_ms"`
	MaxMs     float64 `json:"max_ms"`
	// ByKind maps the master event kind (open, modify, partial_close, close) to its count.
	ByKind map[string]int `json:"by_kind"`
}

// masterEvent is one executed master trade on one master ticket.
type masterEvent struct {
	kind string
	at   time.Time
	seq  int64
}

// CopyLatencies measures, for every executed master trade and every follower linked to
// the master, the time from the trade to the first executed follower order of the same
// kind on the copy of that position before the master's next trade on it. Copies are
// found by the mc<ticket> marker of the follower's open orders. It returns the latencies
// and the result summary.
func CopyLatencies(orders []broker.OrderLogEntry, links []CheckLink) ([]time.Duration, LatencyResult) {
	copies, res := matchCopies(orders, links)
	return latencies(copies), res
}

// latencies are the copies' latencies, in their order.
func latencies(copies []copyMatch) []time.Duration {
	out := make([]time.Duration, len(copies))
	for i, c := range copies {
		out[i] = c.latency()
	}
	return out
}

// copyMatch is one copy CopyLatencies found: a master trade and the follower order that
// copied it.
type copyMatch struct {
	master, follower string
	kind             string // open, modify, partial_close, close
	masterAt, at     time.Time
	requestID        uuid.UUID // the follower order's
	node             string    // its sender
}

func (c copyMatch) latency() time.Duration { return c.at.Sub(c.masterAt) }

// matchCopies is CopyLatencies with the matched copies themselves.
func matchCopies(orders []broker.OrderLogEntry, links []CheckLink) ([]copyMatch, LatencyResult) {
	res := LatencyResult{ByKind: map[string]int{}}
	followersOf := map[string][]string{}
	for _, l := range links {
		followersOf[l.Master] = append(followersOf[l.Master], l.Follower)
	}
	// Master events per ticket, and the remaining volume to tell partial from full closes.
	events := map[int64][]masterEvent{}
	masterOf := map[int64]string{}
	remaining := map[int64]float64{}
	// Follower orders per master ticket.
	type fo struct {
		login string
		op    broker.OrderOp
		at    time.Time
		id    uuid.UUID
		node  string
	}
	copyOf := map[int64]int64{} // follower ticket → master ticket
	byTicket := map[int64][]fo{}
	for _, e := range orders {
		if !e.Executed || e.Duplicate {
			continue
		}
		if e.Master {
			switch e.Op {
			case broker.OpOpen:
				masterOf[e.Ticket] = e.Login
				remaining[e.Ticket] += e.Volume
				events[e.Ticket] = append(events[e.Ticket], masterEvent{"open", e.ServerTime, e.Seq})
			case broker.OpModify:
				events[e.Ticket] = append(events[e.Ticket], masterEvent{"modify", e.ServerTime, e.Seq})
			case broker.OpClose:
				remaining[e.Ticket] -= e.Volume
				kind := "partial_close"
				if remaining[e.Ticket] < 1e-9 {
					kind = "close"
				}
				events[e.Ticket] = append(events[e.Ticket], masterEvent{kind, e.ServerTime, e.Seq})
			}
			continue
		}
		var mt int64
		switch e.Op {
		case broker.OpOpen:
			t, ok := reconcile.ParseMarker(e.Comment)
			if !ok {
				continue
			}
			mt = t
			copyOf[e.Ticket] = t
		default:
			t, ok := copyOf[e.Ticket]
			if !ok {
				continue
			}
			mt = t
		}
		byTicket[mt] = append(byTicket[mt], fo{login: e.Login, op: e.Op, at: e.ServerTime, id: e.RequestID, node: e.Node})
	}
	var out []copyMatch
	tickets := make([]int64, 0, len(events))
	for t := range events {
		tickets = append(tickets, t)
	}
	slices.Sort(tickets)
	for _, t := range tickets {
		evs := events[t]
		master := masterOf[t]
		fos := byTicket[t]
		for i, ev := range evs {
			var until time.Time
			if i+1 < len(evs) {
				until = evs[i+1].at
			}
			want := broker.OpClose
			switch ev.kind {
			case "open":
				want = broker.OpOpen
			case "modify":
				want = broker.OpModify
			}
			seen := map[string]bool{}
			for _, o := range fos {
				if o.op != want || o.at.Before(ev.at) || (!until.IsZero() && !o.at.Before(until)) || seen[o.login] {
					continue
				}
				seen[o.login] = true
				out = append(out, copyMatch{master: master, follower: o.login, kind: ev.kind, masterAt: ev.at, at: o.at, requestID: o.id, node: o.node})
				res.ByKind[ev.kind]++
			}
			if master != "" && ev.kind == "open" {
				res.Unmatched += max(0, len(followersOf[master])-len(seen))
			}
		}
	}
	res.Samples = len(out)
	if len(out) > 0 {
		sorted := latencies(out)
		slices.Sort(sorted)
		res.P50ms = ms(Percentile(sorted, 50))
		res.P99ms = ms(Percentile(sorted, 99))
		res.MaxMs = ms(sorted[len(sorted)-1])
	}
	return out, res
}

// Percentile returns the p-th percentile (nearest rank) of sorted durations; 0 when empty.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/float64(time.Millisecond)*10) / 10 }

// Failover is the takeover of one killed node's accounts.
type Failover struct {
	Node     string    `json:"node"`
	KilledAt time.Time `json:"killed_at"`
	Accounts int       `json:"accounts"` // accounts the node held when it was killed
	// Seconds from SIGKILL until every one of them was owned by another node; -1 when
	// that never happened.
	Seconds float64 `json:"seconds"`
	Done    bool    `json:"done"`
}

// FailoverResult summarises the failovers of a run.
type FailoverResult struct {
	Kills   int        `json:"kills"`
	Done    int        `json:"done"`
	P50s    float64    `json:"p50_s"`
	MaxS    float64    `json:"max_s"`
	BoundS  float64    `json:"bound_s"` // lease + interval
	LimitS  float64    `json:"limit_s"` // bound + slack: the invariant
	Details []Failover `json:"details,omitempty"`
}

// SummariseFailovers computes p50 and max of the completed failovers.
func SummariseFailovers(fs []Failover, bound, slack time.Duration) FailoverResult {
	r := FailoverResult{Kills: len(fs), BoundS: bound.Seconds(), LimitS: (bound + slack).Seconds(), Details: fs}
	var ds []time.Duration
	for _, f := range fs {
		if f.Done {
			r.Done++
			ds = append(ds, time.Duration(f.Seconds*float64(time.Second)))
		}
	}
	slices.Sort(ds)
	if len(ds) > 0 {
		r.P50s = round3(Percentile(ds, 50).Seconds())
		r.MaxS = round3(ds[len(ds)-1].Seconds())
	}
	return r
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
