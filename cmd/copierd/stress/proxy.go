package stress

import (
	"context"
	"fmt"
	"strings"
	"sync"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// proxies is the in-process toxiproxy that stands between every node and PostgreSQL.
type proxies struct {
	srv      *toxiproxy.ApiServer
	upstream string // PostgreSQL host:port
}

func newProxies(upstream string) *proxies {
	return &proxies{srv: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop()), upstream: upstream}
}

// dbProxy is one node's link to PostgreSQL.
type dbProxy struct {
	p    *toxiproxy.Proxy
	addr string

	mu      sync.Mutex
	toxics  []string // names of the toxics in place
	stopped bool
}

// open starts a proxy on a free loopback port.
func (ps *proxies) open(name string) (*dbProxy, error) {
	p := toxiproxy.NewProxy(ps.srv, name, "127.0.0.1:0", ps.upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("toxiproxy %s: %w", name, err)
	}
	p.Lock()
	addr := p.Listen
	p.Unlock()
	return &dbProxy{p: p, addr: addr}, nil
}

// addToxic adds a toxic from its JSON description.
func (d *dbProxy) addToxic(name, js string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return nil
	}
	if _, err := d.p.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
		return fmt.Errorf("toxic %s: %w", name, err)
	}
	d.toxics = append(d.toxics, name)
	return nil
}

// cut drops all traffic in both directions (connections stay open, data is lost) until
// heal.
func (d *dbProxy) cut() error {
	if err := d.addToxic("cut_up", `{"name":"cut_up","type":"timeout","stream":"upstream","attributes":{"timeout":0}}`); err != nil {
		return err
	}
	return d.addToxic("cut_down", `{"name":"cut_down","type":"timeout","stream":"downstream","attributes":{"timeout":0}}`)
}

// latency delays everything PostgreSQL sends to the node by ms (± jitter).
func (d *dbProxy) latency(ms, jitter int64) error {
	return d.addToxic("latency", fmt.Sprintf(`{"name":"latency","type":"latency","stream":"downstream","attributes":{"latency":%d,"jitter":%d}}`, ms, jitter))
}

// heal removes every toxic (a cut's connections close as it goes).
func (d *dbProxy) heal() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, name := range d.toxics {
		_ = d.p.Toxics.RemoveToxic(context.Background(), name)
	}
	d.toxics = nil
}

// stop heals and closes the proxy and its connections.
func (d *dbProxy) stop() {
	d.heal()
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.stopped {
		d.stopped = true
		d.p.Stop()
	}
}
