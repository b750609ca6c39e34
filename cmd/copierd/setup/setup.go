// Package setup builds the world the demo and the stress tool run the engine in: a
// PostgreSQL database (a throwaway cluster or a given URL), and masters, followers and
// their links of mixed sizing modes, created on the simulated trade server and in the
// database. Each tool keeps its own numbers (how many, balances, which links); the way
// they are made is here, once.
package setup

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/pgcluster"
)

// Database is the database a tool runs against.
type Database struct {
	Cluster *pgcluster.Cluster // the throwaway cluster; nil for a given URL
	URL     string
	Addr    string // host:port of the server
	Pool    *pgxpool.Pool
}

// DatabaseOptions say which database to open and how.
type DatabaseOptions struct {
	// URL is the database to use; "" starts a throwaway PostgreSQL.
	URL string
	// Settings are the throwaway cluster's server settings (postgresql.conf names).
	Settings map[string]string
	// Preload are libraries the throwaway cluster loads when it has them (pgcluster).
	Preload []string
	// App and MaxConns configure the pool (application_name, pool size).
	App      string
	MaxConns int32
}

// OpenDatabase starts a throwaway PostgreSQL (o.URL "") or checks o.URL, and opens a
// pool on it. It neither migrates nor waits for the server: the tools do that their own
// way. Close undoes it.
func OpenDatabase(ctx context.Context, o DatabaseOptions) (*Database, error) {
	d := &Database{URL: o.URL}
	if o.URL == "" {
		cl, err := pgcluster.Start(ctx, pgcluster.Options{Settings: o.Settings, Preload: o.Preload})
		if err != nil {
			return nil, err
		}
		d.Cluster, d.URL, d.Addr = cl, cl.URL("postgres"), cl.Addr()
	}
	cfg, err := store.ParseConfig(d.URL, store.Options{MaxConns: o.MaxConns, ApplicationName: o.App})
	if err == nil && d.Cluster == nil {
		d.Addr = net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port)))
	}
	if err == nil {
		d.Pool, err = store.OpenConfig(ctx, cfg)
	}
	if err != nil {
		_ = d.Close()
		return nil, err
	}
	return d, nil
}

// Close closes the pool and stops the throwaway cluster, removing its data.
func (d *Database) Close() error {
	if d.Pool != nil {
		d.Pool.Close()
	}
	if d.Cluster != nil {
		return d.Cluster.Stop()
	}
	return nil
}

// RequireNoFollowers refuses a database that holds follower accounts already: the tools
// number their accounts from fixed ids. who names the tool in the message.
func RequireNoFollowers(ctx context.Context, pool *pgxpool.Pool, who string) error {
	existing, err := store.Leases(ctx, pool, nil)
	if err != nil {
		return err
	}
	if len(existing) > 0 {
		return fmt.Errorf("the database already holds %d follower accounts; %s needs an empty one (omit --database-url for a throwaway PostgreSQL)", len(existing), who)
	}
	return nil
}

// Sizing is a sizing mode that followers get in turn, with its label.
type Sizing struct {
	Label                                     string
	Mode                                      reconcile.SizingMode
	Multiplier, FixedLot, RiskPercent, MaxLot float64 // 0: the default
}

// MixedSizings are lot multiplier ×1, fixed lot 0.1, balance ratio and equity ratio, then
// extra.
func MixedSizings(extra ...Sizing) []Sizing {
	return append([]Sizing{
		{Label: "lot multiplier ×1", Mode: reconcile.SizeLotMultiplier, Multiplier: 1},
		{Label: "fixed lot 0.1", Mode: reconcile.SizeFixedLot, FixedLot: 0.1},
		{Label: "balance ratio", Mode: reconcile.SizeBalanceRatio, Multiplier: 1},
		{Label: "equity ratio", Mode: reconcile.SizeEquityRatio, Multiplier: 1},
	}, extra...)
}

// Settings are a link's settings with this sizing, the rest the defaults. copyAll takes
// any age and force_min, so that every open master position must have its copy (no
// legitimate skip).
func (z Sizing) Settings(copyAll bool) reconcile.Settings {
	s := reconcile.DefaultSettings()
	s.Sizing.Mode = z.Mode
	if z.Multiplier != 0 {
		s.Sizing.Multiplier = z.Multiplier
	}
	s.Sizing.FixedLot, s.Sizing.RiskPercent, s.Sizing.MaxLot = z.FixedLot, z.RiskPercent, z.MaxLot
	if copyAll {
		s.Window.MaxAgeSeconds = 0
		s.Sizing.ForceMin = true
	}
	return s
}

// Account is one simulated account: its id in the database and its login on the
// simulator.
type Account struct {
	ID    int64
	Login string
}

// LinkPlan is one link of a follower: its master (an index into the masters), its magic
// number and its settings.
type LinkPlan struct {
	Master   int
	Magic    int64
	Settings reconcile.Settings
}

// Link is one link as created.
type Link struct {
	Master   int // index into World.Masters
	Follower Account
	Magic    int64
	Settings reconcile.Settings
}

// Plan says which accounts to create. Master i (from 1) is id i, login master-i; follower
// i is id 1,000,000 + i, login follower-i. Every account has leverage 100; masters are
// hedging, followers FollowerMode.
type Plan struct {
	Platform, Server   string
	Masters, Followers int
	// FollowerMode is the followers' position mode on the simulator (0: hedging): netting
	// for a venue served through the fix44 dialect, whose position book nets.
	FollowerMode  broker.AccountMode
	Currency      string  // "" is the simulator's default (USD)
	MasterBalance float64 // every master's
	// FollowerBalance and Links give follower i (from 1) its balance and links.
	FollowerBalance func(i int) float64
	Links           func(i int) []LinkPlan
}

// World is what Create made.
type World struct {
	Masters, Followers []Account
	Links              []Link
}

// Provisioner opens accounts on a simulated trade server (sim.Server).
type Provisioner interface {
	Provision(ctx context.Context, spec broker.AccountSpec) error
}

// Create opens the plan's accounts on the simulator, then writes them and their links to
// the database, eight at a time, masters first (the links refer to them).
func Create(ctx context.Context, pool *pgxpool.Pool, sim Provisioner, p Plan) (World, error) {
	var w World
	var masterJobs, followerJobs []func() error
	for i := 1; i <= p.Masters; i++ {
		m := Account{ID: int64(i), Login: fmt.Sprintf("master-%d", i)}
		w.Masters = append(w.Masters, m)
		if err := sim.Provision(ctx, broker.AccountSpec{Login: m.Login, Currency: p.Currency, Balance: p.MasterBalance, Leverage: 100, Mode: broker.Hedging}); err != nil {
			return w, err
		}
		masterJobs = append(masterJobs, func() error {
			return store.CreateAccount(ctx, pool, store.Account{ID: m.ID, Platform: p.Platform, Role: store.RoleMaster, Enabled: true, Login: m.Login, Server: p.Server})
		})
	}
	for i := 1; i <= p.Followers; i++ {
		f := Account{ID: 1_000_000 + int64(i), Login: fmt.Sprintf("follower-%d", i)}
		w.Followers = append(w.Followers, f)
		mode := p.FollowerMode
		if mode == 0 {
			mode = broker.Hedging
		}
		if err := sim.Provision(ctx, broker.AccountSpec{Login: f.Login, Currency: p.Currency, Balance: p.FollowerBalance(i), Leverage: 100, Mode: mode}); err != nil {
			return w, err
		}
		var links []store.Link
		for _, lp := range p.Links(i) {
			if lp.Master < 0 || lp.Master >= len(w.Masters) {
				return w, fmt.Errorf("follower %d: link to master index %d of %d", i, lp.Master, len(w.Masters))
			}
			js, err := json.Marshal(lp.Settings)
			if err != nil {
				return w, fmt.Errorf("link settings: %w", err)
			}
			links = append(links, store.Link{MasterID: w.Masters[lp.Master].ID, FollowerID: f.ID, Enabled: true, Magic: lp.Magic, Settings: js})
			w.Links = append(w.Links, Link{Master: lp.Master, Follower: f, Magic: lp.Magic, Settings: lp.Settings})
		}
		followerJobs = append(followerJobs, func() error {
			if err := store.CreateAccount(ctx, pool, store.Account{ID: f.ID, Platform: p.Platform, Role: store.RoleFollower, Enabled: true, Login: f.Login, Server: p.Server}); err != nil {
				return err
			}
			for _, l := range links {
				if _, err := store.CreateLink(ctx, pool, l); err != nil {
					return err
				}
			}
			return nil
		})
	}
	for _, jobs := range [][]func() error{masterJobs, followerJobs} {
		if err := Parallel(ctx, 8, jobs); err != nil {
			return w, fmt.Errorf("creating accounts: %w", err)
		}
	}
	return w, nil
}

// Logins are the accounts' logins.
func Logins(accounts []Account) []string {
	out := make([]string, len(accounts))
	for i, a := range accounts {
		out[i] = a.Login
	}
	return out
}

// Parallel runs jobs on n workers and returns the first error (the remaining jobs are
// skipped after one fails or ctx ends).
func Parallel(ctx context.Context, n int, jobs []func() error) error {
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
