package main

import (
	"context"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/store"
)

// metricsHandler serves /metrics through the Prometheus client: the standard Go and
// process collectors, and a collector that reads the engine's own counters and gauges of
// every node the process runs at scrape time (the engine keeps atomics; nothing is
// registered per node, so nodes may come and go).
//
// pool, when it returns one, answers copier_unowned_followers at scrape time (bounded by
// scrapeQueryTimeout; a failed query leaves the family out and the rest is served).
func metricsHandler(nodes func() []*actors.Node, pool func() *pgxpool.Pool) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		newEngineCollector(nodes, pool),
	)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// engineCollector exposes actors.Metrics and Node.Snapshot as Prometheus families; every
// series but copier_nodes carries the node's id in the label node.
type engineCollector struct {
	nodes    func() []*actors.Node
	pool     func() *pgxpool.Pool
	unowned  *prometheus.Desc
	counters []counterFamily
	gauges   map[string]*prometheus.Desc
	latency  *prometheus.Desc
	cycle    *prometheus.Desc
	part     *prometheus.Desc // the copy latency split: label part
	slippage *prometheus.Desc
}

// counterFamily is one counterDef with its descriptor.
type counterFamily struct {
	def  counterDef
	desc *prometheus.Desc
}

// gaugeHelp lists the engine's gauges: name → help, and the extra label when split.
var gaugeHelp = []struct{ name, help, label string }{
	{"copier_nodes", "Nodes running in this process.", ""},
	{"copier_node_info", "Constant 1, labelled with the node's id and platform.", "platform"},
	{"copier_capacity", "Most follower accounts the node holds.", ""},
	{"copier_owned_accounts", "Follower accounts the node owns now.", ""},
	{"copier_fair_share", "The node's fair share of its platform's enabled followers at its last cycle.", ""},
	{"copier_live_nodes", "Live nodes of the node's platform at its last cycle (this one included).", ""},
	{"copier_accounts", "Owned follower accounts by phase.", "phase"},
	{"copier_gate_open", "1 when the node's lease is trusted now (orders may be sent), else 0.", ""},
	{"copier_trust_remaining_seconds", "Seconds until the node's trust ends unless a cycle renews it (0 when closed).", ""},
	{"copier_last_cycle_ok", "1 when the node's last lease cycle succeeded, else 0.", ""},
	{"copier_release_listener_up", "1 when the node receives release notifications now, else 0 (claims follow the interval).", ""},
}

// scrapeQueryTimeout bounds the database query of a scrape.
const scrapeQueryTimeout = 2 * time.Second

func newEngineCollector(nodes func() []*actors.Node, pool func() *pgxpool.Pool) *engineCollector {
	c := &engineCollector{nodes: nodes, pool: pool, gauges: map[string]*prometheus.Desc{}}
	c.unowned = prometheus.NewDesc("copier_unowned_followers",
		"Enabled followers of the node's platform without a live lease (nobody copies to them), counted by the database at scrape time.",
		[]string{"node", "platform"}, nil)
	for _, d := range counterDefs() {
		labels := []string{"node"}
		if d.label != "" {
			labels = append(labels, d.label)
		}
		c.counters = append(c.counters, counterFamily{def: d, desc: prometheus.NewDesc(d.name, d.help, labels, nil)})
	}
	for _, g := range gaugeHelp {
		var labels []string
		if g.name != "copier_nodes" {
			labels = append(labels, "node")
		}
		if g.label != "" {
			labels = append(labels, g.label)
		}
		c.gauges[g.name] = prometheus.NewDesc(g.name, g.help, labels, nil)
	}
	c.latency = prometheus.NewDesc("copier_copy_latency_seconds", "Master event to follower order, by the trade server's clock.", []string{"node"}, nil)
	c.cycle = prometheus.NewDesc("copier_lease_cycle_duration_seconds", "Duration of one lease cycle.", []string{"node"}, nil)
	c.part = prometheus.NewDesc("copier_copy_latency_part_seconds",
		"The copy latency in three parts: feed (master server time to received by the node), node (received to order sent), broker (sent to executed, by the trade server's clock). Clock skew between machines shows in feed and broker.",
		[]string{"node", "part"}, nil)
	c.slippage = prometheus.NewDesc("copier_copy_slippage_points", "The follower's fill against the master's open price, in the follower symbol's points; worse is positive.", []string{"node"}, nil)
	return c
}

// Describe sends every descriptor the collector may use.
func (c *engineCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, f := range c.counters {
		ch <- f.desc
	}
	for _, d := range c.gauges {
		ch <- d
	}
	ch <- c.latency
	ch <- c.part
	ch <- c.slippage
	ch <- c.cycle
	ch <- c.unowned
}

// Collect reads every node once.
func (c *engineCollector) Collect(ch chan<- prometheus.Metric) {
	nodes := c.nodes()
	gauge := func(name string, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(c.gauges[name], prometheus.GaugeValue, v, labels...)
	}
	gauge("copier_nodes", float64(len(nodes)))
	for _, n := range nodes {
		cfg, sum, met := n.Config(), n.Summary(), n.Metrics()
		id := cfg.NodeID
		gauge("copier_node_info", 1, id, cfg.Platform)
		for _, f := range c.counters {
			for _, se := range f.def.series {
				labels := []string{id}
				if f.def.label != "" {
					labels = append(labels, se.labelValue)
				}
				ch <- prometheus.MustNewConstMetric(f.desc, prometheus.CounterValue, float64(se.read(met)), labels...)
			}
		}
		gauge("copier_capacity", float64(cfg.Capacity), id)
		gauge("copier_owned_accounts", float64(sum.Accounts), id)
		gauge("copier_fair_share", float64(sum.LastCycle.Share), id)
		gauge("copier_live_nodes", float64(sum.LastCycle.LiveNodes), id)
		for _, p := range allPhases() {
			gauge("copier_accounts", float64(sum.ByPhase[p]), id, p.String())
		}
		gauge("copier_gate_open", boolFloat(sum.GateOpen), id)
		gauge("copier_trust_remaining_seconds", max(sum.Remaining.Seconds(), 0), id)
		gauge("copier_last_cycle_ok", boolFloat(sum.LastCycle.Err == nil && !sum.LastCycle.Started.IsZero()), id)
		gauge("copier_release_listener_up", boolFloat(n.Listening()), id)
		ch <- constHistogram(c.latency, met.CopyLatency(), id)
		ch <- constHistogram(c.cycle, met.CycleDuration(), id)
		feed, node, brk := met.CopyLatencyParts()
		ch <- constHistogram(c.part, feed, id, "feed")
		ch <- constHistogram(c.part, node, id, "node")
		ch <- constHistogram(c.part, brk, id, "broker")
		sl := met.Slippage()
		slBuckets := make(map[float64]uint64, len(sl.Counts))
		for i, le := range actors.SlippageBounds() {
			slBuckets[le] = uint64(sl.Counts[i])
		}
		ch <- prometheus.MustNewConstHistogram(c.slippage, uint64(sl.Count), sl.Sum, slBuckets, id)
		c.collectUnowned(ch, id, cfg.Platform)
	}
}

// constHistogram converts the engine's cumulative snapshot.
func constHistogram(desc *prometheus.Desc, h actors.Histogram, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(h.Counts))
	for i, le := range actors.HistogramBounds() {
		buckets[le] = uint64(h.Counts[i])
	}
	return prometheus.MustNewConstHistogram(desc, uint64(h.Count), h.Sum, buckets, labels...)
}

// collectUnowned sends copier_unowned_followers of a node's platform, or an invalid
// metric (the scrape goes on without it) when the database does not answer in time.
func (c *engineCollector) collectUnowned(ch chan<- prometheus.Metric, id, platform string) {
	var pool *pgxpool.Pool
	if c.pool != nil {
		pool = c.pool()
	}
	if pool == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), scrapeQueryTimeout)
	defer cancel()
	n, err := store.UnownedFollowers(ctx, pool, platform)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.unowned, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.unowned, prometheus.GaugeValue, float64(n), id, platform)
}
