package actors

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snapcopier/copier/internal/fewmap"
	"github.com/snapcopier/copier/leasekeeper"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/reconcile/follower"
)

// AccountPhase is where an AccountActor is in its life (follower.Phase).
type AccountPhase = follower.Phase

// Phases.
const (
	PhaseStarting    = follower.PhaseStarting    // loading configuration, connecting
	PhaseReconciling = follower.PhaseReconciling // fetching and planning
	PhaseCopying     = follower.PhaseCopying     // in step with its masters
	PhaseDirty       = follower.PhaseDirty       // work was dropped or an outcome is unknown; a reconcile is due
	PhaseFailed      = follower.PhaseFailed      // crashed or cannot connect; retried with backoff
)

// JournalEntry is one order an AccountActor sent (or dropped), or a stop-out.
type JournalEntry = follower.Journal

// journalSize bounds the copy journal kept per account: 20 entries of ~150 bytes each are
// about 60 MB at 20,000 accounts (50 would be about 150 MB, by the same estimate).
const journalSize = 20

// AccountStatus is one owned account as the node sees it.
type AccountStatus struct {
	ID       int64
	Epoch    int64
	Phase    AccountPhase
	GateOpen bool
	Balance  float64
	Equity   float64
	// EquityUnknown: the trade server does not say the balance and equity (Balance and
	// Equity are then 0, not the account's).
	EquityUnknown bool
	Positions     int
	LastCopy      time.Time
	LastLag       time.Duration // master event (server time) to follower order (server time)
	LastError     string
	Crashes       int
	Reconciles    int
	Dropped       int
	StopOut       string         // the stop-out in force, or the equity protection that cannot be evaluated; "" while copying
	Quality       []LinkQuality  // per link with copies on the event path, by link id
	Journal       []JournalEntry // newest last
}

// accountBoard is one account's live status. Each account has its own lock, so there is
// no shared lock on the fan-out path.
type accountBoard struct {
	mu sync.Mutex
	s  AccountStatus
	// quality is each link's recent copies, a ring allocated on its first copy; keyed in a
	// fewmap: the first link's ring is found on every order without a map lookup.
	quality fewmap.Map[*qualityRing]
	// journal is a ring of the newest journalSize entries (s.Journal stays nil): an entry
	// is written in place, not appended behind 19 entries moved down by one on every order.
	journal []JournalEntry
	jnext   int                              // the oldest entry, overwritten next, once the ring is full
	gate    atomic.Pointer[leasekeeper.Gate] // the account's current gate
}

func (b *accountBoard) update(f func(*AccountStatus)) {
	b.mu.Lock()
	f(&b.s)
	b.mu.Unlock()
}

// record applies one step of the account to its board under one lock: the status when
// it changed (st non-nil), the journal entries and their copies' quality. On the fan-out
// path each lock is also the step's first touch of the board's memory.
func (b *accountBoard) record(st *follower.Status, journal []JournalEntry) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if st != nil {
		s := &b.s
		s.Phase, s.LastError, s.Balance, s.Equity, s.Positions = st.Phase, st.LastError, st.Balance, st.Equity, st.Positions
		s.EquityUnknown = st.EquityUnknown
		s.LastCopy, s.LastLag, s.Reconciles, s.Dropped, s.StopOut = st.LastCopy, st.LastLag, st.Reconciles, st.Dropped, st.StopOut
	}
	for i := range journal {
		if journal[i].HasQuality {
			b.addQualityLocked(journal[i].Link, journal[i].Quality)
		}
		b.addJournalLocked(journal[i])
	}
}

func (b *accountBoard) addJournalLocked(e JournalEntry) {
	if len(b.journal) < journalSize {
		// Grown by doubling up to journalSize exactly: most accounts keep a few entries,
		// and room for twenty up front is 5 KB an account.
		if len(b.journal) == cap(b.journal) {
			grown := make([]JournalEntry, len(b.journal), min(max(2*cap(b.journal), 2), journalSize))
			copy(grown, b.journal)
			b.journal = grown
		}
		b.journal = append(b.journal, e)
		return
	}
	b.journal[b.jnext] = e
	b.jnext = (b.jnext + 1) % journalSize
}

func (b *accountBoard) snapshot() AccountStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.s
	if g := b.gate.Load(); g != nil {
		s.GateOpen = g.HoldsLease()
	}
	if len(b.journal) > 0 {
		s.Journal = make([]JournalEntry, 0, len(b.journal))
		s.Journal = append(append(s.Journal, b.journal[b.jnext:]...), b.journal[:b.jnext]...)
	}
	s.Quality = nil
	for link, r := range b.quality.All() {
		s.Quality = append(s.Quality, r.summary(link))
	}
	sort.Slice(s.Quality, func(i, j int) bool { return s.Quality[i].Link < s.Quality[j].Link })
	return s
}

// addQualityLocked records one copy's quality for link's summary.
func (b *accountBoard) addQualityLocked(link int64, q Quality) {
	r, _ := b.quality.Get(link)
	if r == nil {
		r = &qualityRing{}
		b.quality.Set(link, r)
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

// phases counts the accounts by phase, and in all.
func (b *board) phases() (map[AccountPhase]int, int) {
	byPhase, total := map[AccountPhase]int{}, 0
	b.m.Range(func(_, v any) bool {
		a := v.(*accountBoard)
		a.mu.Lock()
		byPhase[a.s.Phase]++
		a.mu.Unlock()
		total++
		return true
	})
	return byPhase, total
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
	reconciles         [follower.CauseQuote + 1]atomic.Int64      // by follower.Cause
	StopOuts           atomic.Int64                               // stop-outs (a breach of a drawdown or daily loss limit)
	skips              [reconcile.SkipStopPassed + 1]atomic.Int64 // master positions not copied, by reconcile.SkipReason
	StaleWritesRefused atomic.Int64
	Crashes            atomic.Int64
	Cycles             atomic.Int64
	CycleFailures      atomic.Int64
	Claims             atomic.Int64
	Renewals           atomic.Int64
	Releases           atomic.Int64
	Lost               atomic.Int64
	Wakes              atomic.Int64 // release notifications from other nodes of the platform
	CyclesWoken        atomic.Int64 // cycles run for a release notification
	CyclesAtLeaseEnd   atomic.Int64 // cycles run when the earliest foreign lease ended
	HandOffs           atomic.Int64 // leases handed back to balance the platform
	TicketRowsPruned   atomic.Int64 // closed ticket-map rows deleted past the history
	latency            latencyHistogram
	cycle              latencyHistogram
	feedLatency        latencyHistogram // the latency split: see Quality
	nodeLatency        latencyHistogram
	brokerLatency      latencyHistogram
	slippage           slippageHistogram
}

// Reconciles is how many reconciles ran for cause.
func (m *Metrics) Reconciles(cause follower.Cause) int64 { return countOf(m.reconciles[:], int(cause)) }

// ReconcilesTotal is how many reconciles ran for any cause.
func (m *Metrics) ReconcilesTotal() int64 { return countSum(m.reconciles[:]) }

func (m *Metrics) countReconcile(cause follower.Cause) { countUp(m.reconciles[:], int(cause)) }

// Skips is how many master positions were not copied for reason: each position and
// reason once while it lasts, as journalled.
func (m *Metrics) Skips(reason reconcile.SkipReason) int64 { return countOf(m.skips[:], int(reason)) }

// SkipsTotal is how many master positions were not copied, for any reason.
func (m *Metrics) SkipsTotal() int64 { return countSum(m.skips[:]) }

func (m *Metrics) countSkip(reason reconcile.SkipReason) { countUp(m.skips[:], int(reason)) }

// countOf reads counts[i] of counters kept by a kind's number (0 for a number out of range).
func countOf(counts []atomic.Int64, i int) int64 {
	if i < 0 || i >= len(counts) {
		return 0
	}
	return counts[i].Load()
}

// countSum is the sum of counts.
func countSum(counts []atomic.Int64) int64 {
	var n int64
	for i := range counts {
		n += counts[i].Load()
	}
	return n
}

// countUp adds one to counts[i], unless i is out of range.
func countUp(counts []atomic.Int64, i int) {
	if i >= 0 && i < len(counts) {
		counts[i].Add(1)
	}
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
