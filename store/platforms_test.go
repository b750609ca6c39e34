package store_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

// TestPlatformSymbols: a platform's FIX symbol list is stored, replaced and removed (an
// empty list); the loaders give it to every account of the platform without a list of its
// own — followers and their masters, in the batch and the single load — while an account's
// own list comes first and the operator's view of an account stays its own settings. The
// table refuses entries of the wrong types, whoever writes them.
func TestPlatformSymbols(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	ctx := ctxT(t)
	own := []store.FIXSymbol{{Name: "ACC", ID: "1", ContractSize: 100000, Digits: 5, MinLot: 0.01, LotStep: 0.01}}
	plat := []store.FIXSymbol{{Name: "EURUSD", ID: "1", ContractSize: 100000, Digits: 5, MinLot: 0.01, LotStep: 0.01, MaxLot: 50},
		{Name: "XAUUSD", ContractSize: 100, Digits: 2, MinLot: 0.1, LotStep: 0.1}}
	for _, a := range []store.Account{
		{ID: 1, Platform: "fixv", Role: store.RoleFollower, Enabled: true, Login: "1", FIX: store.FIXSession{Dialect: "fix44", Symbols: own}},
		{ID: 2, Platform: "fixv", Role: store.RoleFollower, Enabled: true, Login: "2", FIX: store.FIXSession{Dialect: "fix44"}},
		{ID: 3, Platform: "other", Role: store.RoleFollower, Enabled: true, Login: "3"},
		{ID: 9, Platform: "fixv", Role: store.RoleMaster, Enabled: true, Login: "9"},
	} {
		if err := store.CreateAccount(ctx, db.Pool, a); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.CreateLink(ctx, db.Pool, store.Link{MasterID: 9, FollowerID: 2, Enabled: true, Magic: 1}); err != nil {
		t.Fatal(err)
	}
	if got, err := store.PlatformSymbols(ctx, db.Pool, "fixv"); err != nil || got != nil {
		t.Fatalf("before any list: %+v (%v), want none", got, err)
	}
	if err := store.SetPlatformSymbols(ctx, db.Pool, "fixv", plat); err != nil {
		t.Fatal(err)
	}
	if got, err := store.PlatformSymbols(ctx, db.Pool, "fixv"); err != nil || !reflect.DeepEqual(got, plat) {
		t.Fatalf("stored %+v (%v), want %+v", got, err, plat)
	}
	if n, err := store.PlatformSymbolCounts(ctx, db.Pool); err != nil || !reflect.DeepEqual(n, map[string]int{"fixv": 2}) {
		t.Fatalf("counts %v (%v)", n, err)
	}
	for p, want := range map[string]int{"fixv": 2, "other": 0} {
		if n, err := store.PlatformSymbolCount(ctx, db.Pool, p); err != nil || n != want {
			t.Fatalf("count of %s: %d (%v), want %d", p, n, err, want)
		}
	}

	// want: the list each account trades by (1: its own; 2 and its master 9: the platform's;
	// 3: none, the node's).
	check := func(want2 []store.FIXSymbol) {
		t.Helper()
		loads, err := store.LoadFollowers(ctx, db.Pool, []store.LoadRequest{{ID: 1}, {ID: 2}, {ID: 3}})
		if err != nil {
			t.Fatal(err)
		}
		single, err := store.LoadFollowerConfig(ctx, db.Pool, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name string
			got  []store.FIXSymbol
			want []store.FIXSymbol
		}{
			{"own list", loads[0].Config.Account.FIX.Symbols, own},
			{"platform's list", loads[1].Config.Account.FIX.Symbols, want2},
			{"platform's list, single load", single.Account.FIX.Symbols, want2},
			{"master, platform's list", loads[1].Config.Masters[9].FIX.Symbols, want2},
			{"master, platform's list, single load", single.Masters[9].FIX.Symbols, want2},
			{"another platform", loads[2].Config.Account.FIX.Symbols, nil},
		} {
			if !reflect.DeepEqual(c.got, c.want) {
				t.Errorf("%s: %+v, want %+v", c.name, c.got, c.want)
			}
		}
		if single.Account.FIX.Dialect != "fix44" || loads[1].Config.Account.FIX.Dialect != "fix44" {
			t.Errorf("the other settings were lost: %+v", single.Account.FIX)
		}
		if row, err := store.GetAccountRow(ctx, db.Pool, 2); err != nil || row.FIX.Symbols != nil {
			t.Errorf("the account's own settings show the platform's list: %+v (%v)", row.FIX, err)
		}
	}
	check(plat)

	// Replaced: the next load reads the new list; the account's configuration version does
	// not move (the list is the platform's, not the account's).
	before, _ := store.LoadFollowerConfig(ctx, db.Pool, 2)
	plat2 := plat[1:]
	if err := store.SetPlatformSymbols(ctx, db.Pool, "fixv", plat2); err != nil {
		t.Fatal(err)
	}
	check(plat2)
	if after, _ := store.LoadFollowerConfig(ctx, db.Pool, 2); after.ConfigVersion != before.ConfigVersion {
		t.Fatalf("config version %d → %d", before.ConfigVersion, after.ConfigVersion)
	}

	// The table holds a list of entries of the right types, whoever writes it.
	for _, bad := range []string{`{}`, `"EURUSD"`, `["EURUSD"]`, `[{"name": 1}]`, `[{"id": null}]`, `[{"name": "X", "digits": 2.5}]`,
		`[{"name": "X", "min_lot": "0.01"}]`, `[{"name": "X", "max_lot": 1e400}]`} {
		_, err := db.Pool.Exec(ctx, `UPDATE platform_fix_symbols SET symbols = $1::jsonb WHERE platform = 'fixv'`, bad)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.ConstraintName != "platform_fix_symbols_list" {
			t.Errorf("symbols = %s: %v, want the check constraint to refuse it", bad, err)
		}
	}
	check(plat2)

	// Removed: an empty list is no list; the platform's accounts fall back to the node's.
	if err := store.SetPlatformSymbols(ctx, db.Pool, "fixv", nil); err != nil {
		t.Fatal(err)
	}
	if got, err := store.PlatformSymbols(ctx, db.Pool, "fixv"); err != nil || got != nil {
		t.Fatalf("removed: %+v (%v)", got, err)
	}
	check(nil)
}
