package store_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

// TestLoadFollowersMatchesTheSingleLoads: the batch load of a takeover reads, for every
// follower, exactly what the one-account loads read — links (enabled only, by id), masters
// (enabled only), protections, and the open ticket map when asked — and reports a missing
// account as not found.
func TestLoadFollowersMatchesTheSingleLoads(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	ctx := ctxT(t)
	for _, q := range []string{
		`INSERT INTO trading_accounts (id, platform, role, login, enabled) VALUES
			(1, 'mt5', 'master', 'm1', true), (2, 'mt5', 'master', 'm2', true), (3, 'mt5', 'master', 'm3', false),
			(11, 'mt5', 'follower', 'f11', true), (12, 'mt5', 'follower', 'f12', true), (13, 'mt5', 'follower', 'f13', true)`,
		`INSERT INTO copy_links (master_id, follower_id, magic, settings, enabled) VALUES
			(1, 11, 101, '{"sizing":{"multiplier":2}}', true), (2, 11, 102, '{}', true), (3, 11, 103, '{}', true),
			(1, 12, 201, '{}', false), (2, 12, 202, '{}', true)`,
		`INSERT INTO account_protection (account_id, limits) VALUES (11, '{"max_drawdown":{"percent":10}}')`,
		`INSERT INTO protection_state (follower_id, link_id, state, reset_gen, lease_epoch) VALUES (11, 0, '{"high_water":5}', 2, 7)`,
		`INSERT INTO copy_positions (follower_id, link_id, master_ticket, follower_ticket, volume, lease_epoch, closed_at)
			SELECT 11, id, 500, 900, 0.5, 3, NULL FROM copy_links WHERE magic = 101
			UNION ALL SELECT 11, id, 501, 901, 0.5, 3, now() FROM copy_links WHERE magic = 101
			UNION ALL SELECT 12, id, 600, 902, 1, 4, NULL FROM copy_links WHERE magic = 202`,
	} {
		if _, err := db.Pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	reqs := []store.LoadRequest{{ID: 11, Tickets: true}, {ID: 12}, {ID: 13, Tickets: true}, {ID: 99, Tickets: true}}
	got, err := store.LoadFollowers(ctx, db.Pool, reqs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(reqs) {
		t.Fatalf("%d answers for %d requests", len(got), len(reqs))
	}
	for i, r := range reqs {
		g := got[i]
		cfg, err := store.LoadFollowerConfig(ctx, db.Pool, r.ID)
		if errors.Is(err, store.ErrNotFound) {
			if !errors.Is(g.Err, store.ErrNotFound) {
				t.Fatalf("account %d: batch error %v, want not found", r.ID, g.Err)
			}
			continue
		}
		if err != nil || g.Err != nil {
			t.Fatalf("account %d: %v / %v", r.ID, err, g.Err)
		}
		if len(cfg.Links) == 0 {
			cfg.Links = nil
		}
		if len(g.Config.Links) == 0 {
			g.Config.Links = nil
		}
		if !reflect.DeepEqual(g.Config, cfg) {
			t.Fatalf("account %d configuration:\nbatch  %+v\nsingle %+v", r.ID, g.Config, cfg)
		}
		prot, err := store.LoadProtection(ctx, db.Pool, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g.Protection, prot) {
			t.Fatalf("account %d protection:\nbatch  %+v\nsingle %+v", r.ID, g.Protection, prot)
		}
		tickets, err := store.OpenTickets(ctx, db.Pool, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case !r.Tickets && (g.WithTickets || g.Tickets != nil):
			t.Fatalf("account %d: tickets read without being asked: %+v", r.ID, g.Tickets)
		case r.Tickets && (!g.WithTickets || len(g.Tickets) != len(tickets) || len(tickets) > 0 && !reflect.DeepEqual(g.Tickets, tickets)):
			t.Fatalf("account %d tickets:\nbatch  %+v\nsingle %+v", r.ID, g.Tickets, tickets)
		}
	}
	if len(got[0].Config.Links) != 3 || len(got[0].Config.Masters) != 2 || len(got[0].Tickets) != 1 || got[0].Protection.States[0].ResetGen != 2 {
		t.Fatalf("account 11: %+v — want 3 enabled links (one of a switched-off master), 2 enabled masters, 1 open ticket, its reset generation", got[0])
	}
}

// TestFIXSessionSettings: an account's FIX session settings are stored, read back by every
// loader, left alone by an update without them, and a change moves the configuration
// version (the owner reconnects) while writing the same settings again does not.
func TestFIXSessionSettings(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	ctx := ctxT(t)
	fix := store.FIXSession{SenderCompID: "demo.broker.42", TargetCompID: "cServer", TargetSubID: "TRADE", Username: "42", Dialect: "fix44", PositionMode: "netting",
		Symbols: []store.FIXSymbol{{Name: "EURUSD", ID: "1", ContractSize: 100000, Digits: 5, MinLot: 0.01, LotStep: 0.01, MaxLot: 50}, {Name: "XAUUSD", ContractSize: 100, Digits: 2, MinLot: 0.1, LotStep: 0.1}}}
	if err := store.CreateAccount(ctx, db.Pool, store.Account{ID: 42, Platform: "fix", Role: store.RoleFollower, Enabled: true, Login: "42", FIX: fix}); err != nil {
		t.Fatal(err)
	}
	read := func() (store.FIXSession, int64) {
		t.Helper()
		cfg, err := store.LoadFollowerConfig(ctx, db.Pool, 42)
		if err != nil {
			t.Fatal(err)
		}
		loads, err := store.LoadFollowers(ctx, db.Pool, []store.LoadRequest{{ID: 42}})
		if err != nil || !reflect.DeepEqual(loads[0].Config.Account.FIX, cfg.Account.FIX) {
			t.Fatalf("batch load %+v (%v), single %+v", loads, err, cfg.Account.FIX)
		}
		row, err := store.GetAccountRow(ctx, db.Pool, 42)
		if err != nil || !reflect.DeepEqual(row.FIX, cfg.Account.FIX) {
			t.Fatalf("account row %+v (%v), config %+v", row.FIX, err, cfg.Account.FIX)
		}
		return cfg.Account.FIX, cfg.ConfigVersion
	}
	got, v1 := read()
	if !reflect.DeepEqual(got, fix) {
		t.Fatalf("stored %+v, want %+v", got, fix)
	}
	enabled := true
	if err := store.UpdateAccount(ctx, db.Pool, store.AccountUpdate{ID: 42, Enabled: &enabled}); err != nil {
		t.Fatal(err)
	}
	if got, v := read(); !reflect.DeepEqual(got, fix) || v != v1 {
		t.Fatalf("an update without settings: %+v, version %d → %d", got, v1, v)
	}
	if err := store.UpdateAccount(ctx, db.Pool, store.AccountUpdate{ID: 42, FIX: &fix}); err != nil {
		t.Fatal(err)
	}
	if _, v := read(); v != v1 {
		t.Fatalf("the same settings moved the version %d → %d", v1, v)
	}
	changed := fix
	changed.SenderSubID = "desk2"
	changed.Symbols = append([]store.FIXSymbol(nil), fix.Symbols...)
	changed.Symbols[1].LotStep = 0.01 // a change of the list alone is a change of settings too
	if err := store.UpdateAccount(ctx, db.Pool, store.AccountUpdate{ID: 42, FIX: &changed}); err != nil {
		t.Fatal(err)
	}
	if got, v := read(); !reflect.DeepEqual(got, changed) || v != v1+1 {
		t.Fatalf("a change: %+v, version %d → %d; want %+v, %d", got, v1, v, changed, v1+1)
	}
	if err := store.UpdateAccount(ctx, db.Pool, store.AccountUpdate{ID: 42, FIX: &store.FIXSession{}}); err != nil {
		t.Fatal(err)
	}
	if got, v := read(); !reflect.DeepEqual(got, store.FIXSession{}) || v != v1+2 {
		t.Fatalf("removed: %+v, version %d → %d; want none, %d", got, v1, v, v1+2)
	}
	var raw string
	if err := db.Pool.QueryRow(ctx, `SELECT fix_session::text FROM trading_accounts WHERE id = 42`).Scan(&raw); err != nil || raw != "{}" {
		t.Fatalf("removed settings stored as %q (%v), want {}", raw, err)
	}

	// A master's settings reach its followers' configurations: the master feed logs on
	// with them.
	mfix := store.FIXSession{SenderCompID: "live.broker.9", Username: "9"}
	if err := store.CreateAccount(ctx, db.Pool, store.Account{ID: 9, Platform: "fix", Role: store.RoleMaster, Enabled: true, Login: "9", FIX: mfix}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.CreateLink(ctx, db.Pool, store.Link{MasterID: 9, FollowerID: 42, Enabled: true, Magic: 1}); err != nil {
		t.Fatal(err)
	}
	cfg, err := store.LoadFollowerConfig(ctx, db.Pool, 42)
	if err != nil || !reflect.DeepEqual(cfg.Masters[9].FIX, mfix) {
		t.Fatalf("master in the follower's configuration: %+v (%v), want FIX %+v", cfg.Masters[9], err, mfix)
	}
	loads, err := store.LoadFollowers(ctx, db.Pool, []store.LoadRequest{{ID: 42}})
	if err != nil || !reflect.DeepEqual(loads[0].Config.Masters[9].FIX, mfix) {
		t.Fatalf("master in the batch load: %+v (%v), want FIX %+v", loads, err, mfix)
	}

	// The column holds an object of strings (and a symbol list of the right types), whoever writes it: anything else would fail
	// every load of the account. A refused write changes nothing.
	_, before := read()
	for _, bad := range []string{`[]`, `"demo.broker.42"`, `null`, `{"sender_comp_id": 42}`, `{"username": null}`, `{"target_comp_id": {"x": "y"}}`,
		`{"symbols": "EURUSD"}`, `{"symbols": {"name": "EURUSD"}}`, `{"symbols": ["EURUSD"]}`, `{"symbols": [{"name": 1}]}`, `{"symbols": [{"id": null}]}`,
		`{"symbols": [{"name": "X", "digits": 2.5}]}`, `{"symbols": [{"name": "X", "min_lot": "0.01"}]}`, `{"symbols": [{"name": "X", "max_lot": 1e400}]}`} {
		_, err := db.Pool.Exec(ctx, `UPDATE trading_accounts SET fix_session = $1::jsonb WHERE id = 42`, bad)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.ConstraintName != "trading_accounts_fix_session_object" {
			t.Errorf("fix_session = %s: %v, want the check constraint to refuse it", bad, err)
		}
	}
	if got, v := read(); !reflect.DeepEqual(got, store.FIXSession{}) || v != before {
		t.Fatalf("after refused writes: %+v, version %d → %d", got, before, v)
	}
	// Keys the engine does not know are kept and ignored (a newer node may add some).
	if _, err := db.Pool.Exec(ctx, `UPDATE trading_accounts SET fix_session = '{"sender_comp_id": "S", "later": "x"}' WHERE id = 42`); err != nil {
		t.Fatal(err)
	}
	if got, _ := read(); !reflect.DeepEqual(got, store.FIXSession{SenderCompID: "S"}) {
		t.Fatalf("with an unknown key: %+v", got)
	}
}
