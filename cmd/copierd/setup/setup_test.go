package setup_test

import (
	"strings"
	"testing"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/sim"
	"github.com/snapcopier/copier/cmd/copierd/setup"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// TestSizingSettings: a sizing keeps the defaults it does not name, and copyAll takes any
// age and force_min; every mixed sizing is valid settings.
func TestSizingSettings(t *testing.T) {
	half := setup.Sizing{Label: "half", Mode: reconcile.SizeLotMultiplier, Multiplier: 0.5}
	s := half.Settings(false)
	def := reconcile.DefaultSettings()
	if s.Sizing.Multiplier != 0.5 || s.Window != def.Window || s.Sizing.ForceMin != def.Sizing.ForceMin {
		t.Fatalf("Settings(false) = %+v", s)
	}
	if all := half.Settings(true); all.Window.MaxAgeSeconds != 0 || !all.Sizing.ForceMin {
		t.Fatalf("Settings(true) = %+v", all)
	}
	fixed := setup.MixedSizings()[1].Settings(false)
	if fixed.Sizing.Mode != reconcile.SizeFixedLot || fixed.Sizing.FixedLot != 0.1 || fixed.Sizing.Multiplier != def.Sizing.Multiplier {
		t.Fatalf("fixed lot = %+v", fixed.Sizing)
	}
	for _, z := range setup.MixedSizings(setup.Sizing{Label: "risk", Mode: reconcile.SizeRiskPercent, RiskPercent: 0.5, MaxLot: 2}) {
		if err := z.Settings(true).Validate(); err != nil {
			t.Errorf("%s: %v", z.Label, err)
		}
	}
}

// TestCreate builds a small world on a real database and the simulator: every account on
// both, each link in the database as planned, and a second database refused by
// RequireNoFollowers.
func TestCreate(t *testing.T) {
	db := storetest.NewDB(t)
	ctx := t.Context()
	if err := setup.RequireNoFollowers(ctx, db.Pool, "the test"); err != nil {
		t.Fatalf("empty database refused: %v", err)
	}
	srv := sim.New(sim.Config{Seed: 1})
	zs := setup.MixedSizings()
	w, err := setup.Create(ctx, db.Pool, srv, setup.Plan{Platform: "sim", Server: "t", Masters: 2, Followers: 5, MasterBalance: 10_000,
		FollowerBalance: func(i int) float64 { return float64(1000 * i) },
		Links: func(i int) []setup.LinkPlan {
			ls := []setup.LinkPlan{{Master: 0, Magic: 10, Settings: zs[i%len(zs)].Settings(true)}}
			if i == 5 {
				ls = append(ls, setup.LinkPlan{Master: 1, Magic: 11, Settings: zs[0].Settings(false)})
			}
			return ls
		}})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Masters) != 2 || len(w.Followers) != 5 || len(w.Links) != 6 {
		t.Fatalf("world: %d masters, %d followers, %d links", len(w.Masters), len(w.Followers), len(w.Links))
	}
	if f := w.Followers[4]; f.ID != 1_000_005 || f.Login != "follower-5" || w.Masters[1].ID != 2 || w.Masters[1].Login != "master-2" {
		t.Fatalf("numbering: follower %+v, master %+v", f, w.Masters[1])
	}
	for _, a := range append(w.Masters, w.Followers...) {
		if _, err := srv.AccountPositions(ctx, a.Login); err != nil {
			t.Errorf("%s not on the simulator: %v", a.Login, err)
		}
	}
	links, _, err := store.FindLinks(ctx, db.Pool, store.LinkQuery{FollowerID: 1_000_005, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(links) != 2 || links[0].Magic+links[1].Magic != 21 {
		t.Fatalf("follower 5's links: %+v", links)
	}
	if err := setup.RequireNoFollowers(ctx, db.Pool, "the test"); err == nil {
		t.Fatal("a database with followers was accepted")
	}
	_, err = setup.Create(ctx, db.Pool, sim.New(sim.Config{Seed: 1}), setup.Plan{Masters: 1, Followers: 1, FollowerBalance: func(int) float64 { return 1 },
		Links: func(int) []setup.LinkPlan { return []setup.LinkPlan{{Master: 3}} }})
	if err == nil || !strings.Contains(err.Error(), "master index 3 of 1") {
		t.Fatalf("a link to a master index out of range: %v", err)
	}
}

// TestCreateNettingFollowers: Plan.FollowerMode opens the followers in that mode; the
// masters stay hedging.
func TestCreateNettingFollowers(t *testing.T) {
	db := storetest.NewDB(t)
	ctx := t.Context()
	srv := sim.New(sim.Config{Seed: 1})
	w, err := setup.Create(ctx, db.Pool, srv, setup.Plan{Platform: "sim", Masters: 1, Followers: 1, MasterBalance: 10_000, FollowerMode: broker.Netting,
		FollowerBalance: func(int) float64 { return 10_000 },
		Links: func(int) []setup.LinkPlan {
			return []setup.LinkPlan{{Master: 0, Magic: 10, Settings: setup.MixedSizings()[0].Settings(false)}}
		}})
	if err != nil {
		t.Fatal(err)
	}
	for login, want := range map[string]broker.AccountMode{w.Masters[0].Login: broker.Hedging, w.Followers[0].Login: broker.Netting} {
		s, err := srv.Connect(ctx, broker.Credentials{Login: login})
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Account(ctx)
		_ = s.Close()
		if err != nil || info.Mode != want {
			t.Errorf("%s: mode %v (%v), want %v", login, info.Mode, err, want)
		}
	}
}
