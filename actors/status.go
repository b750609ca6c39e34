package actors

import (
	"github.com/snapcopier/copier/leasekeeper"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// AccountPhase is where an AccountActor is in its life.
type AccountPhase int8

// Phases.
const (
	PhaseStarting    AccountPhase = iota + 1 // loading configuration, connecting
	PhaseReconciling                         // fetching and planning
	PhaseCopying                             // in step with its masters
	PhaseDirty                               // work was dropped or an outcome is unknown; a reconcile is due
	PhaseFailed                              // crashed or cannot connect; retried with backoff
)

// String names the phase (it is also the status written to trading_accounts.status).
func (p AccountPhase) String() string {
	switch p {
	case PhaseStarting:
		return "starting"
	case PhaseReconciling:
		return "reconciling"
	case PhaseCopying:
		return "copying"
	case PhaseDirty:
		return "dirty"
	case PhaseFailed:
		return "failed"
	}
	return "unknown"
}

// JournalEntry is one order an AccountActor sent (or dropped).
type JournalEntry struct {
	Time         time.Time
	Action       string
	MasterTicket int64
	Ticket       int64
	Result       string // "ok", an error class, or "dropped"
	Latency      time.Duration
	Link         int64 // the link the order served (0: none, such as a stop-out)
	// Quality is the latency split and slippage of an order copied on the event path
	// (HasQuality); a reconcile's orders have none.
	Quality    Quality
	HasQuality bool
}

// journalSize bounds the copy journal kept per account: 20 entries of ~150 bytes each are
// about 60 MB at 20,000 accounts (50 would be about 150 MB, by the same estimate).
const journalSize = 20

// AccountStatus is one owned account as the node sees it.
type AccountStatus struct {
	ID         int64
	Epoch      int64
	Phase      AccountPhase
	GateOpen   bool
	Balance    float64
	Equity     float64
	Positions  int
	LastCopy   time.Time
	LastLag    time.Duration // master event (server time) to follower order (server time)
	LastError  string
	Crashes    int
	Reconciles int
	Dropped    int
	StopOut    string         // the stop-out in force, "" while copying
	Quality    []LinkQuality  // per link with copies on the event path, by link id
	Journal    []JournalEntry // newest last
}

// accountBoard is one account's live status. Each account has its own lock, so there is
// no shared lock on the fan-out path.
type accountBoard struct {
	mu      sync.Mutex
	s       AccountStatus
	quality map[int64]*qualityRing // link → recent copies' quality, allocated on the first
	// copy
	gate atomic.Pointer[leasekeeper.Gate] // the account's current gate
}

func (b *accountBoard) update(f func(*AccountStatus)) {
	b.mu.Lock()
	f(&b.s)
	b.mu.Unlock()
}

func (b *accountBoard) journal(e JournalEntry) {
	b.update(func(s *AccountStatus) {
		if len(s.Journal) == journalSize {
			copy(s.Journal, s.Journal[1:])
			s.Journal = s.Journal[:journalSize-1]
		}
		s.Journal = append(s.Journal, e)
	})
}

// fields is the status without its journal and quality summaries: what the status row
// needs, cheap enough for every order.
func (b *accountBoard) fields() AccountStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.s
	s.Journal = nil
	return s
}

func (b *accountBoard) snapshot() AccountStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.s
	if g := b.gate.Load(); g != nil {
		s.GateOpen = g.HoldsLease()
	}
	s.Journal = append([]JournalEntry(nil), b.s.Journal...)
	s.Quality = nil
	for link, r := range b.quality {
		s.Quality = append(s.Quality, r.summary(link))
	}
	sort.Slice(s.Quality, func(i, j int) bool { return s.Quality[i].Link < s.Quality[j].Link })
	return s
}

// addQuality records one copy's quality for link's summary.
func (b *accountBoard) addQuality(link int64, q Quality) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.quality == nil {
		b.quality = map[int64]*qualityRing{}
	}
	r := b.quality[link]
	if r == nil {
		r = &qualityRing{}
		b.quality[link] = r
	}
	r.add(q)
}

// board holds every account's status; the map is only touched on spawn and stop.
type board struct {
	m sync.Map // int64 → *accountBoard
}

func (b *board) get(id int64) *accountBoard {
	v, _ := b.m.LoadOrStore(id, &accountBoard{s: AccountStatus{ID: id}})
	return v.(*accountBoard)
}

func (b *board) remove(id int64) { b.m.Delete(id) }

func (b *board) all() []AccountStatus {
	var out []AccountStatus
	b.m.Range(func(_, v any) bool {
		out = append(out, v.(*accountBoard).snapshot())
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Metrics are the node's counters, safe for concurrent use.
type Metrics struct {
	OrdersOK           atomic.Int64
	OrdersRetryable    atomic.Int64
	OrdersUnknown      atomic.Int64
	OrdersPermanent    atomic.Int64
	OrdersFenced       atomic.Int64
	OrdersExpired      atomic.Int64 // refused by the receiver: arrived after the lease trust ended
	OrdersOther        atomic.Int64
	DroppedWork        atomic.Int64
	ReconcilesGap      atomic.Int64
	ReconcilesStart    atomic.Int64
	ReconcilesGate     atomic.Int64
	ReconcilesUnknown  atomic.Int64
	ReconcilesPeriodic atomic.Int64
	ReconcilesRestart  atomic.Int64
	ReconcilesConfig   atomic.Int64
	// ReconcilesOrderFailed: an order failed without executing (disconnected, market
	// closed) and the account is repaired after a pause.
	ReconcilesOrderFailed atomic.Int64
	ReconcilesProtection  atomic.Int64 // a stop-out started or ended
	StopOuts              atomic.Int64 // stop-outs (a breach of a drawdown or daily loss limit)
	ReconcilesChained     atomic.Int64 // another reconcile right after one: events or causes arrived during it
	StaleWritesRefused    atomic.Int64
	Crashes               atomic.Int64
	Cycles                atomic.Int64
	CycleFailures         atomic.Int64
	Claims                atomic.Int64
	Renewals              atomic.Int64
	Releases              atomic.Int64
	Lost                  atomic.Int64
	Wakes                 atomic.Int64 // release notifications from other nodes of the platform
	CyclesWoken           atomic.Int64 // cycles run for a release notification
	CyclesAtLeaseEnd      atomic.Int64 // cycles run when the earliest foreign lease ended
	HandOffs              atomic.Int64 // leases handed back to balance the platform
	latency               latencyHistogram
	cycle                 latencyHistogram
	feedLatency           latencyHistogram // the latency split: see Quality
	nodeLatency           latencyHistogram
	brokerLatency         latencyHistogram
	slippage              slippageHistogram
}

// CopyLatencyParts returns the histograms of the three parts of the copy latency: master
// server time → received by the node, received → order sent, sent → executed by the
// broker's clock.
func (m *Metrics) CopyLatencyParts() (feed, node, broker Histogram) {
	return m.feedLatency.snapshot(), m.nodeLatency.snapshot(), m.brokerLatency.snapshot()
}

// Slippage returns the slippage histogram (points; worse is positive).
func (m *Metrics) Slippage() SlippageHistogram { return m.slippage.snapshot() }

// observe adds one copy's quality to the histograms. Negative parts (clock skew between
// machines) count in the lowest bucket.
func (m *Metrics) observeQuality(q Quality) {
	m.feedLatency.observe(max(q.Feed, 0))
	m.nodeLatency.observe(max(q.Node, 0))
	m.brokerLatency.observe(max(q.Broker, 0))
	if q.HasSlippage {
		m.slippage.observe(q.Slippage)
	}
}

// CopyLatency returns the copy latency histogram (master event to follower order).
func (m *Metrics) CopyLatency() Histogram { return m.latency.snapshot() }

// CycleDuration returns the lease cycle duration histogram.
func (m *Metrics) CycleDuration() Histogram { return m.cycle.snapshot() }

// histogramBounds are the upper bounds of the latency histogram buckets, in seconds.
var histogramBounds = [...]float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// HistogramBounds returns the upper bounds of the histogram buckets, in seconds.
func HistogramBounds() []float64 { return append([]float64(nil), histogramBounds[:]...) }

// Histogram is a cumulative-bucket snapshot in Prometheus form.
type Histogram struct {
	Counts [len(histogramBounds)]int64 // observations ≤ HistogramBounds()[i], cumulative
	Count  int64
	Sum    float64 // seconds
}

type latencyHistogram struct {
	buckets [len(histogramBounds) + 1]atomic.Int64
	count   atomic.Int64
	sumNs   atomic.Int64
}

func (h *latencyHistogram) observe(d time.Duration) {
	s := d.Seconds()
	i := sort.SearchFloat64s(histogramBounds[:], s)
	h.buckets[i].Add(1)
	h.count.Add(1)
	h.sumNs.Add(int64(d))
}

func (h *latencyHistogram) snapshot() Histogram {
	var out Histogram
	var cum int64
	for i := range histogramBounds {
		cum += h.buckets[i].Load()
		out.Counts[i] = cum
	}
	out.Count = h.count.Load()
	out.Sum = time.Duration(h.sumNs.Load()).Seconds()
	return out
}
