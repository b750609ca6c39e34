package actors_test

import (
	"context"
	"fmt"
	"strings"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

// dbProxy is a toxiproxy between one node's pool and PostgreSQL, to cut it off.
type dbProxy struct {
	c     *cluster
	proxy *toxiproxy.Proxy
	pool  *pgxpool.Pool
	isCut bool // cut is called from one goroutine at a time (the test's, then its cleanup)
}

// proxiedPool opens a pool that reaches the test database through a proxy of its own.
func (c *cluster) proxiedPool(name string) *dbProxy {
	c.t.Helper()
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	proxy := toxiproxy.NewProxy(srv, name, "127.0.0.1:0", storetest.Cluster().Addr())
	must(c.t, proxy.Start())
	pool, err := store.Open(context.Background(), c.db.URLVia(proxy.Listen), store.Options{})
	if err != nil {
		proxy.Stop()
		c.t.Fatal(err)
	}
	// Cleanups run last in, first out: the proxy stops (closing every connection through
	// it) before the pool closes. The other way round, closing a connection that a cut
	// still holds waits forever for pgx's cancel request through the same cut.
	c.t.Cleanup(pool.Close)
	c.t.Cleanup(proxy.Stop)
	return &dbProxy{c: c, proxy: proxy, pool: pool}
}

// cut drops (on) or restores (off) all traffic both ways.
func (p *dbProxy) cut(on bool) {
	p.c.t.Helper()
	if p.isCut == on {
		return
	}
	p.isCut = on
	for _, dir := range []string{"upstream", "downstream"} {
		name := "cut-" + dir
		if on {
			_, err := p.proxy.Toxics.AddToxicJson(strings.NewReader(fmt.Sprintf(`{"name":%q,"type":"timeout","stream":%q,"attributes":{"timeout":0}}`, name, dir)))
			must(p.c.t, err)
		} else {
			must(p.c.t, p.proxy.Toxics.RemoveToxic(context.Background(), name))
		}
	}
}
