package stress

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/bridge"
	"github.com/snapcopier/copier/broker/sim"
	"github.com/snapcopier/copier/broker/sim/activity"
	"github.com/snapcopier/copier/broker/sim/fixfront"
	"github.com/snapcopier/copier/cmd/copierd/setup"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/store"
)

// setupDatabase starts (or connects to) PostgreSQL, migrates it and installs the audit.
func (r *runner) setupDatabase(ctx context.Context) error {
	if r.o.DatabaseURL == "" {
		fmt.Fprintln(r.out, "stress: starting a throwaway PostgreSQL ...")
	} else if _, err := withHost(r.o.DatabaseURL, "127.0.0.1:1"); err != nil {
		return fmt.Errorf("stress: %w", err)
	}
	// synchronous_commit on: a restart must not lose acknowledged commits (the engine
	// relies on the database's durability; losing a committed claim is not a fault of the
	// engine).
	db, err := setup.OpenDatabase(ctx, setup.DatabaseOptions{URL: r.o.DatabaseURL, App: "copierd-stress", MaxConns: 8,
		Settings: map[string]string{"synchronous_commit": "on", "max_connections": "400"}, Preload: []string{"pg_stat_statements"}})
	if err != nil {
		return fmt.Errorf("stress: %w", err)
	}
	r.db, r.cluster, r.dbURL, r.pgAddr, r.pool = db, db.Cluster, db.URL, db.Addr, db.Pool
	if db.Cluster != nil {
		r.logf("PostgreSQL on %s (data %s)", db.Addr, db.Cluster.Dir())
	} else {
		r.logf("external PostgreSQL on %s", db.Addr)
	}
	mctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := store.Migrate(mctx, r.pool); err != nil {
		return fmt.Errorf("stress: migrate: %w", err)
	}
	if err := setup.RequireNoFollowers(mctx, r.pool, "the stress run"); err != nil {
		return fmt.Errorf("stress: %w", err)
	}
	if err := installAudit(mctx, r.pool); err != nil {
		return fmt.Errorf("stress: audit: %w", err)
	}
	r.statements, err = r.watchStatements(mctx)
	return err
}

// stressSizings are the sizings followers get in turn: the mixed modes, a half lot
// multiplier and a capped risk percentage.
func stressSizings() []setup.Sizing {
	return setup.MixedSizings(
		setup.Sizing{Label: "lot multiplier ×0.5", Mode: reconcile.SizeLotMultiplier, Multiplier: 0.5},
		setup.Sizing{Label: "risk 0.5 %, at most 2 lots", Mode: reconcile.SizeRiskPercent, RiskPercent: 0.5, MaxLot: 2},
	)
}

// quoteLogin is a fault-free account the load generator reads prices with.
const quoteLogin = "stress-quotes"

// setupAccounts creates the masters, followers and links on the simulator and in the
// database. Every tenth follower copies a second master. The links copy everything (any
// age, force_min): no legitimate skip, so every open master position must have its copy.
func (r *runner) setupAccounts(ctx context.Context) error {
	o := r.o
	r.sim = sim.New(sim.Config{Seed: int64(o.Seed), Options: broker.ServerOptions{EnforceTokens: o.EnforceTokens, DedupRequests: o.Dedup}})
	if err := r.sim.Provision(ctx, broker.AccountSpec{Login: quoteLogin, Balance: 1000}); err != nil {
		return fmt.Errorf("stress: %w", err)
	}
	if err := r.sim.SetFaults(ctx, quoteLogin, broker.Faults{}); err != nil { // its own, empty profile
		return fmt.Errorf("stress: %w", err)
	}
	quotes, err := r.sim.Connect(ctx, broker.Credentials{Login: quoteLogin})
	if err != nil {
		return fmt.Errorf("stress: %w", err)
	}
	sizings := stressSizings()
	world, err := setup.Create(ctx, r.pool, r.sim, setup.Plan{Platform: Platform, Server: "stress",
		Masters: o.Masters, Followers: o.Followers, MasterBalance: 100_000,
		FollowerBalance: func(i int) float64 { return 50_000 + 50_000*float64(i%3) },
		Links: func(i int) []setup.LinkPlan {
			masters := []int{(i - 1) % o.Masters}
			if i%10 == 0 && o.Masters > 1 {
				masters = append(masters, i%o.Masters)
			}
			var ls []setup.LinkPlan
			for k, m := range masters {
				ls = append(ls, setup.LinkPlan{Master: m, Magic: 100_000 + int64(m+1), Settings: sizings[(i+k)%len(sizings)].Settings(true)})
			}
			return ls
		}})
	if err != nil {
		return fmt.Errorf("stress: %w", err)
	}
	for _, m := range world.Masters {
		r.masters = append(r.masters, account{id: m.ID, login: m.Login})
	}
	for _, f := range world.Followers {
		r.followers = append(r.followers, account{id: f.ID, login: f.Login})
	}
	for _, l := range world.Links {
		r.links = append(r.links, CheckLink{Master: world.Masters[l.Master].Login, Follower: l.Follower.Login, Magic: l.Magic})
	}
	r.gen = activity.New(activity.Config{Control: r.sim, Quotes: quotes, Masters: setup.Logins(world.Masters), Seed: o.Seed, Comment: "stress"})
	r.logf("created %d masters, %d followers, %d links", len(r.masters), len(r.followers), len(r.links))
	return nil
}

// setupBroker serves the simulator over the bridge protocol on a loopback port.
func (r *runner) setupBroker() error {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Errorf("stress: token: %w", err)
	}
	r.token = hex.EncodeToString(b[:])
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("stress: bridge listener: %w", err)
	}
	r.bridgeAddr = l.Addr().String()
	r.bridge = bridge.NewServer(r.sim, r.sim, bridge.ServerOptions{Token: r.token, Logger: zerolog.Nop(), MaxInflight: 4096})
	r.bridgeDone = make(chan error, 1)
	go func() { r.bridgeDone <- r.bridge.Serve(l) }()
	r.logf("simulator serving the bridge on %s", r.bridgeAddr)
	if r.o.Broker == "fix" {
		if r.front, err = fixfront.Start("127.0.0.1:0", r.sim, r.sim, fixfront.Options{Token: r.token}); err != nil {
			return fmt.Errorf("stress: FIX front: %w", err)
		}
		r.logf("simulator serving FIX 4.4 on %s; the nodes trade over FIX", r.front.Addr())
	}
	return nil
}

// brokerURL is the nodes' --broker.
func (r *runner) brokerURL() string {
	if r.front != nil {
		return "fix://" + r.front.Addr()
	}
	return "bridge://" + r.bridgeAddr
}

// teardown stops whatever is still running: node processes, proxies, the bridge, the
// pool and the throwaway PostgreSQL.
func (r *runner) teardown() {
	for _, n := range r.allNodes() {
		if n.alive() {
			_ = n.kill()
			<-n.done
		}
		n.proxy.stop()
	}
	if r.front != nil {
		_ = r.front.Close()
	}
	if r.bridge != nil {
		_ = r.bridge.Close()
		<-r.bridgeDone
	}
	if r.db != nil {
		if err := r.db.Close(); err != nil {
			fmt.Fprintf(r.out, "stress: stopping PostgreSQL: %v\n", err)
		}
	}
}

// errNoCluster is returned by a restart-db fault against an external database.
var errNoCluster = errors.New("skipped: the database is external (restart-db needs the throwaway PostgreSQL)")
