package stress

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/bridge"
	"github.com/snapcopier/copier/broker/sim"
	"github.com/snapcopier/copier/broker/sim/activity"
	"github.com/snapcopier/copier/broker/sim/fixfront"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/pgcluster"
)

// setupDatabase starts (or connects to) PostgreSQL, migrates it and installs the audit.
func (r *runner) setupDatabase(ctx context.Context) error {
	if r.o.DatabaseURL == "" {
		fmt.Fprintln(r.out, "stress: starting a throwaway PostgreSQL ...")
		// synchronous_commit on: a restart must not lose acknowledged commits (the engine
		// relies on the database's durability; losing a committed claim is not a fault
		// of the engine).
		cl, err := pgcluster.Start(ctx, pgcluster.Options{Settings: map[string]string{
			"synchronous_commit": "on", "max_connections": "400",
		}})
		if err != nil {
			return fmt.Errorf("stress: %w", err)
		}
		r.cluster = cl
		r.dbURL = cl.URL("postgres")
		r.pgAddr = cl.Addr()
		r.logf("PostgreSQL on %s (data %s)", cl.Addr(), cl.Dir())
	} else {
		cfg, err := store.ParseConfig(r.o.DatabaseURL, store.Options{})
		if err != nil {
			return fmt.Errorf("stress: %w", err)
		}
		if _, err := withHost(r.o.DatabaseURL, "127.0.0.1:1"); err != nil {
			return fmt.Errorf("stress: %w", err)
		}
		r.dbURL = r.o.DatabaseURL
		r.pgAddr = net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port)))
		r.logf("external PostgreSQL on %s", r.pgAddr)
	}
	cfg, err := store.ParseConfig(r.dbURL, store.Options{MaxConns: 8, ApplicationName: "copierd-stress"})
	if err != nil {
		return fmt.Errorf("stress: %w", err)
	}
	pool, err := store.OpenConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("stress: %w", err)
	}
	r.pool = pool
	mctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := store.Migrate(mctx, pool); err != nil {
		return fmt.Errorf("stress: migrate: %w", err)
	}
	existing, err := store.Leases(mctx, pool, nil)
	if err != nil {
		return fmt.Errorf("stress: %w", err)
	}
	if len(existing) > 0 {
		return fmt.Errorf("stress: the database already holds %d follower accounts; the stress run needs an empty one (omit --database-url for a throwaway PostgreSQL)", len(existing))
	}
	if err := installAudit(mctx, pool); err != nil {
		return fmt.Errorf("stress: audit: %w", err)
	}
	return nil
}

// stressSizings are the link settings followers get in turn: mixed sizing modes, no
// filters, any age, force_min (no legitimate skip: every open master position must have
// its copy).
func stressSizings() []reconcile.Settings {
	mk := func(f func(*reconcile.Sizing)) reconcile.Settings {
		s := reconcile.DefaultSettings()
		s.Window.MaxAgeSeconds = 0
		s.Sizing.ForceMin = true
		f(&s.Sizing)
		return s
	}
	return []reconcile.Settings{
		mk(func(z *reconcile.Sizing) { z.Mode, z.Multiplier = reconcile.SizeLotMultiplier, 1 }),
		mk(func(z *reconcile.Sizing) { z.Mode, z.FixedLot = reconcile.SizeFixedLot, 0.1 }),
		mk(func(z *reconcile.Sizing) { z.Mode, z.Multiplier = reconcile.SizeBalanceRatio, 1 }),
		mk(func(z *reconcile.Sizing) { z.Mode, z.Multiplier = reconcile.SizeEquityRatio, 1 }),
		mk(func(z *reconcile.Sizing) { z.Mode, z.Multiplier = reconcile.SizeLotMultiplier, 0.5 }),
		mk(func(z *reconcile.Sizing) { z.Mode, z.RiskPercent, z.MaxLot = reconcile.SizeRiskPercent, 0.5, 2 }),
	}
}

// quoteLogin is a fault-free account the load generator reads prices with.
const quoteLogin = "stress-quotes"

// setupAccounts creates the masters, followers and links on the simulator and in the
// database. Every tenth follower copies a second master.
func (r *runner) setupAccounts(ctx context.Context) error {
	o := r.o
	r.sim = sim.New(sim.Config{Seed: int64(o.Seed), Options: broker.ServerOptions{EnforceTokens: o.EnforceTokens, DedupRequests: o.Dedup}})
	const server = "stress"
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
	var masterJobs, followerJobs []func() error
	for i := 1; i <= o.Masters; i++ {
		m := account{id: int64(i), login: fmt.Sprintf("master-%d", i)}
		r.masters = append(r.masters, m)
		if err := r.sim.Provision(ctx, broker.AccountSpec{Login: m.login, Balance: 100_000, Leverage: 100, Mode: broker.Hedging}); err != nil {
			return fmt.Errorf("stress: %w", err)
		}
		masterJobs = append(masterJobs, func() error {
			return store.CreateAccount(ctx, r.pool, store.Account{ID: m.id, Platform: Platform, Role: store.RoleMaster, Enabled: true, Login: m.login, Server: server})
		})
	}
	sizings := stressSizings()
	type linkSpec struct {
		master   account
		magic    int64
		settings []byte
	}
	for i := 1; i <= o.Followers; i++ {
		f := account{id: 1_000_000 + int64(i), login: fmt.Sprintf("follower-%d", i)}
		r.followers = append(r.followers, f)
		balance := 50_000 + 50_000*float64(i%3)
		if err := r.sim.Provision(ctx, broker.AccountSpec{Login: f.login, Balance: balance, Leverage: 100, Mode: broker.Hedging}); err != nil {
			return fmt.Errorf("stress: %w", err)
		}
		var ls []linkSpec
		masters := []account{r.masters[(i-1)%len(r.masters)]}
		if i%10 == 0 && len(r.masters) > 1 {
			masters = append(masters, r.masters[i%len(r.masters)])
		}
		for k, m := range masters {
			js, err := json.Marshal(sizings[(i+k)%len(sizings)])
			if err != nil {
				return fmt.Errorf("stress: link settings: %w", err)
			}
			ls = append(ls, linkSpec{master: m, magic: 100_000 + m.id, settings: js})
			r.links = append(r.links, CheckLink{Master: m.login, Follower: f.login, Magic: 100_000 + m.id})
		}
		followerJobs = append(followerJobs, func() error {
			if err := store.CreateAccount(ctx, r.pool, store.Account{ID: f.id, Platform: Platform, Role: store.RoleFollower, Enabled: true, Login: f.login, Server: server}); err != nil {
				return err
			}
			for _, l := range ls {
				if _, err := store.CreateLink(ctx, r.pool, store.Link{MasterID: l.master.id, FollowerID: f.id, Enabled: true, Magic: l.magic, Settings: l.settings}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	// Masters first: the links refer to them.
	for _, jobs := range [][]func() error{masterJobs, followerJobs} {
		if err := parallel(ctx, 8, jobs); err != nil {
			return fmt.Errorf("stress: creating accounts: %w", err)
		}
	}
	logins := make([]string, len(r.masters))
	for i, m := range r.masters {
		logins[i] = m.login
	}
	r.gen = activity.New(activity.Config{Control: r.sim, Quotes: quotes, Masters: logins, Seed: o.Seed, Comment: "stress"})
	r.logf("created %d masters, %d followers, %d links", len(r.masters), len(r.followers), len(r.links))
	return nil
}

// parallel runs jobs on n workers and returns the first error (the remaining jobs are
// skipped after one fails or ctx ends).
func parallel(ctx context.Context, n int, jobs []func() error) error {
	var mu sync.Mutex
	var first error
	next := 0
	var wg sync.WaitGroup
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if first != nil || next >= len(jobs) {
					mu.Unlock()
					return
				}
				if err := ctx.Err(); err != nil {
					first = err
					mu.Unlock()
					return
				}
				job := jobs[next]
				next++
				mu.Unlock()
				if err := job(); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return first
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
		if r.front, err = fixfront.Start("127.0.0.1:0", r.sim, r.sim, fixfront.Options{}); err != nil {
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
	if r.pool != nil {
		r.pool.Close()
	}
	if r.cluster != nil {
		if err := r.cluster.Stop(); err != nil {
			fmt.Fprintf(r.out, "stress: stopping PostgreSQL: %v\n", err)
		}
	}
}

// errNoCluster is returned by a restart-db fault against an external database.
var errNoCluster = errors.New("skipped: the database is external (restart-db needs the throwaway PostgreSQL)")
