package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/storetest"
)

func TestSearchAccountsFiltersAndPages(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	ctx := ctxT(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 30)
	seedAccounts(t, db.Pool, "mt4", "master", 100, 5)
	if _, err := db.Pool.Exec(ctx, `UPDATE trading_accounts SET enabled = false, last_error = 'boom' WHERE id IN (3, 4)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE trading_accounts SET login = 'weird%_\login' WHERE id = 7`); err != nil {
		t.Fatal(err)
	}
	cycle(t, db.Pool, "node-a", nil, 10) // claims 1..10 minus the disabled ones → 1,2,5..12

	f := false
	cases := []struct {
		name  string
		q     store.AccountQuery
		total int
		first int64
	}{
		{"all", store.AccountQuery{}, 35, 1},
		{"role", store.AccountQuery{Role: store.RoleMaster}, 5, 100},
		{"platform", store.AccountQuery{Platform: "mt4"}, 5, 100},
		{"node", store.AccountQuery{Node: "node-a"}, 10, 1},
		{"disabled", store.AccountQuery{Enabled: &f}, 2, 3},
		{"problems", store.AccountQuery{Problems: true}, 2, 3},
		{"id", store.AccountQuery{Search: "102"}, 1, 102},
		{"login substring", store.AccountQuery{Search: "LOGIN-2"}, 11, 2}, // 2, 20..29
		{"node substring", store.AccountQuery{Search: "ode-"}, 10, 1},
		{"like metacharacters are literal", store.AccountQuery{Search: `%_\`}, 1, 7},
		{"percent alone matches nothing else", store.AccountQuery{Search: "%"}, 1, 7},
		{"no match", store.AccountQuery{Search: "nobody"}, 0, 0},
	}
	for _, c := range cases {
		page, err := store.SearchAccounts(ctx, db.Pool, c.q)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if page.Total != c.total {
			t.Errorf("%s: total %d, want %d", c.name, page.Total, c.total)
		}
		if c.total > 0 && (len(page.Rows) == 0 || page.Rows[0].ID != c.first) {
			t.Errorf("%s: first row %+v, want id %d", c.name, page.Rows, c.first)
		}
	}

	page, err := store.SearchAccounts(ctx, db.Pool, store.AccountQuery{Limit: 10, Offset: 30})
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != 35 || len(page.Rows) != 5 || page.Rows[0].ID != 100 {
		t.Fatalf("last page: total %d, %d rows", page.Total, len(page.Rows))
	}
	owned, err := store.GetAccountRow(ctx, db.Pool, 1)
	if err != nil {
		t.Fatal(err)
	}
	if owned.NodeID != "node-a" || owned.Epoch != 1 || owned.LeaseLeft <= 50*time.Second || owned.LeaseLeft > time.Minute {
		t.Fatalf("owned row: %+v", owned)
	}
	free, _ := store.GetAccountRow(ctx, db.Pool, 100)
	if free.NodeID != "" || !free.LeaseUntil.IsZero() || free.LeaseLeft != 0 || free.Balance != nil || free.HasCredentials {
		t.Fatalf("free row: %+v", free)
	}
	if _, err := store.GetAccountRow(ctx, db.Pool, 999); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
}

// TestSearchAccountsAt20000Rows is the console's scale: every page, the last page and a
// search stay fast on 20,000 accounts.
func TestSearchAccountsAt20000Rows(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	ctx := ctxT(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 20_000)
	if _, err := db.Pool.Exec(ctx, `ANALYZE trading_accounts`); err != nil {
		t.Fatal(err)
	}
	for _, q := range []store.AccountQuery{
		{Limit: 50},
		{Limit: 50, Offset: 19_950},
		{Search: "login-1999", Limit: 50},
		{Search: "19999"},
		{Platform: "mt5", Role: store.RoleFollower, Limit: 100, Offset: 10_000},
	} {
		start := time.Now()
		page, err := store.SearchAccounts(ctx, db.Pool, q)
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("query %+v took %v", q, took)
		}
		if len(page.Rows) == 0 {
			t.Errorf("query %+v: no rows", q)
		}
	}
	page, _ := store.SearchAccounts(ctx, db.Pool, store.AccountQuery{Limit: 50, Offset: 19_950})
	if page.Total != 20_000 || len(page.Rows) != 50 || page.Rows[49].ID != 20_000 {
		t.Fatalf("last page: total %d, rows %d", page.Total, len(page.Rows))
	}
}

func TestClusterLeases(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	ctx := ctxT(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 10)
	seedAccounts(t, db.Pool, "mt5", "master", 100, 2)
	a := cycle(t, db.Pool, "a", nil, 4)
	cycle(t, db.Pool, "b", nil, 3)
	expire(t, db.Pool, a.Owned[0].ID)
	if _, err := db.Pool.Exec(ctx, `UPDATE trading_accounts SET enabled = false WHERE id = 10`); err != nil {
		t.Fatal(err)
	}
	nodes, tot, err := store.ClusterLeases(ctx, db.Pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 2 || nodes[0].NodeID != "a" || nodes[1].NodeID != "b" {
		t.Fatalf("nodes %+v", nodes)
	}
	na := nodes[0]
	if na.Accounts != 4 || na.Live != 3 || na.EarliestLeft >= 0 || na.LatestLeft < 50*time.Second ||
		len(na.Platforms) != 1 || na.Platforms[0] != "mt5" || !na.Earliest.Before(na.Latest) {
		t.Fatalf("node a %+v", na)
	}
	// 10 followers: 3 live on a, 3 on b, 1 expired, 1 disabled (free) → unowned 1 expired + 2 free enabled.
	if tot.Masters != 2 || tot.Followers != 10 || tot.Disabled != 1 || tot.Unowned != 3 || tot.DBTime.IsZero() {
		t.Fatalf("totals %+v", tot)
	}
	if n, err := store.CountOwnedBy(ctx, db.Pool, "b"); err != nil || n != 3 {
		t.Fatalf("CountOwnedBy = %d, %v", n, err)
	}
	plats, err := store.AccountPlatforms(ctx, db.Pool)
	if err != nil || len(plats) != 1 || plats[0] != "mt5" {
		t.Fatalf("platforms %v %v", plats, err)
	}
}

func TestUpdateAccount(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	ctx := ctxT(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 2)
	seedAccounts(t, db.Pool, "mt5", "master", 100, 1)
	before, _ := store.GetAccountRow(ctx, db.Pool, 1)

	login, srv := "new-login", "Broker-Live"
	if err := store.UpdateAccount(ctx, db.Pool, store.AccountUpdate{ID: 1, Login: &login, Server: &srv,
		SetCredentials: true, Credentials: []byte{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}
	after, _ := store.GetAccountRow(ctx, db.Pool, 1)
	if after.Login != login || after.Server != srv || !after.HasCredentials || after.ConfigVersion != before.ConfigVersion+1 ||
		after.Platform != "mt5" || after.Role != store.RoleFollower || !after.Enabled {
		t.Fatalf("after update: %+v", after)
	}
	// Keep the credentials when not asked to change them; clear them when asked.
	off := false
	if err := store.UpdateAccount(ctx, db.Pool, store.AccountUpdate{ID: 1, Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	if r, _ := store.GetAccountRow(ctx, db.Pool, 1); !r.HasCredentials || r.Enabled {
		t.Fatalf("credentials dropped or still enabled: %+v", r)
	}
	if err := store.UpdateAccount(ctx, db.Pool, store.AccountUpdate{ID: 1, SetCredentials: true}); err != nil {
		t.Fatal(err)
	}
	if r, _ := store.GetAccountRow(ctx, db.Pool, 1); r.HasCredentials {
		t.Fatal("credentials not cleared")
	}

	// A role that links use cannot change; without links it can.
	if _, err := store.CreateLink(ctx, db.Pool, store.Link{MasterID: 100, FollowerID: 2, Enabled: true, Magic: 5}); err != nil {
		t.Fatal(err)
	}
	master := store.RoleMaster
	if err := store.UpdateAccount(ctx, db.Pool, store.AccountUpdate{ID: 2, Role: &master}); !errors.Is(err, store.ErrRoleInUse) {
		t.Fatalf("role change with links: %v", err)
	}
	follower := store.RoleFollower
	if err := store.UpdateAccount(ctx, db.Pool, store.AccountUpdate{ID: 100, Role: &follower}); !errors.Is(err, store.ErrRoleInUse) {
		t.Fatalf("master role change with links: %v", err)
	}
	if err := store.UpdateAccount(ctx, db.Pool, store.AccountUpdate{ID: 1, Role: &master}); err != nil {
		t.Fatalf("role change without links: %v", err)
	}
	if err := store.UpdateAccount(ctx, db.Pool, store.AccountUpdate{ID: 99, Role: &master}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
	// Account 1 is login "new-login" on "Broker-Live"; moving it to login-2 on "" clashes with account 2.
	dup, empty := "login-2", ""
	err := store.UpdateAccount(ctx, db.Pool, store.AccountUpdate{ID: 1, Login: &dup, Server: &empty})
	if c, ok := store.UniqueViolation(err); !ok || c != "trading_accounts_platform_server_login_key" {
		t.Fatalf("duplicate login: %v (%q)", err, c)
	}
}

func TestLinksQueries(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	ctx := ctxT(t)
	seedAccounts(t, db.Pool, "mt5", "follower", 1, 3)
	seedAccounts(t, db.Pool, "mt5", "master", 100, 2)
	var ids []int64
	for _, l := range []store.Link{{MasterID: 100, FollowerID: 1, Magic: 1}, {MasterID: 100, FollowerID: 2, Magic: 1}, {MasterID: 101, FollowerID: 1, Magic: 2}} {
		l.Enabled = true
		id, err := store.CreateLink(ctx, db.Pool, l)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	_, err := store.CreateLink(ctx, db.Pool, store.Link{MasterID: 100, FollowerID: 1, Magic: 9, Enabled: true})
	if c, ok := store.UniqueViolation(err); !ok || c != "copy_links_master_id_follower_id_key" {
		t.Fatalf("duplicate link: %v %q", err, c)
	}
	for _, c := range []struct {
		q    store.LinkQuery
		want int
	}{
		{store.LinkQuery{}, 3},
		{store.LinkQuery{AccountID: 1}, 2},
		{store.LinkQuery{AccountID: 100}, 2},
		{store.LinkQuery{MasterID: 101}, 1},
		{store.LinkQuery{FollowerID: 2}, 1},
		{store.LinkQuery{FollowerID: 3}, 0},
	} {
		rows, total, err := store.FindLinks(ctx, db.Pool, c.q)
		if err != nil {
			t.Fatal(err)
		}
		if total != c.want || len(rows) != c.want {
			t.Errorf("%+v: %d/%d links, want %d", c.q, len(rows), total, c.want)
		}
	}
	before, _ := store.GetAccountRow(ctx, db.Pool, 1)
	if err := store.SetLinkEnabled(ctx, db.Pool, ids[0], false); err != nil {
		t.Fatal(err)
	}
	l, err := store.GetLinkRow(ctx, db.Pool, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if l.Enabled || l.Version != 2 || l.MasterLogin != "login-100" || l.FollowerLogin != "login-1" {
		t.Fatalf("link %+v", l)
	}
	if after, _ := store.GetAccountRow(ctx, db.Pool, 1); after.ConfigVersion != before.ConfigVersion+1 {
		t.Fatal("follower config version did not move")
	}
	if err := store.SetLinkEnabled(ctx, db.Pool, 999, true); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing link: %v", err)
	}
	if _, err := store.GetLinkRow(ctx, db.Pool, 999); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing link: %v", err)
	}
	used, err := store.MagicInUse(ctx, db.Pool, 1, 2, 0)
	if err != nil || !used {
		t.Fatalf("magic 2 on follower 1: %v %v", used, err)
	}
	if used, _ := store.MagicInUse(ctx, db.Pool, 1, 2, ids[2]); used {
		t.Fatal("a link's own magic counted against it")
	}
	if used, _ := store.MagicInUse(ctx, db.Pool, 2, 2, 0); used {
		t.Fatal("magic of another follower counted")
	}
}
