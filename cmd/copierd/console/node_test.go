package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/snapcopier/copier/actors"
	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/sim"
	"github.com/snapcopier/copier/cmd/copierd/console"
	"github.com/snapcopier/copier/leasekeeper"
	"github.com/snapcopier/copier/store"
	"github.com/snapcopier/copier/store/secrets"
	"github.com/snapcopier/copier/store/storetest"
)

// shortLease is the test timing: lease 3 s, fence 1 s, a cycle every 300 ms.
var shortLease = leasekeeper.Config{Lease: 3 * time.Second, Fence: time.Second, Interval: 300 * time.Millisecond}

// startNode starts an engine node on the test database and the simulator; it is stopped at
// the end of the test. Sealed credentials are opened with sealer.
func startNode(t *testing.T, db *storetest.DB, srv *sim.Server, sealer *secrets.Sealer, name string, capacity int) *actors.Node {
	t.Helper()
	log := zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr}).Level(zerolog.ErrorLevel)
	n, err := actors.Start(context.Background(), actors.Config{NodeID: name, Platform: "sim", Capacity: capacity, Lease: shortLease,
		ReconcileEvery: -1, FlushEvery: 200 * time.Millisecond},
		actors.Deps{Pool: db.NewPool(t, store.Options{}), Broker: srv, Logger: log, Credentials: console.CredentialsFunc(sealer)})
	must(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = n.Stop(ctx)
	})
	return n
}

func newSim() *sim.Server {
	return sim.New(sim.Config{Seed: 1, AutoProvision: true, DefaultAccount: broker.AccountSpec{Currency: "USD", Balance: 100_000, Leverage: 100, Mode: broker.Hedging}})
}

// nodeJSON is the subset of GET /api/node the tests read.
type nodeJSON struct {
	NodeID   string         `json:"node_id"`
	State    string         `json:"state"`
	Claiming bool           `json:"claiming"`
	Owned    int            `json:"owned"`
	GateOpen bool           `json:"gate_open"`
	Left     float64        `json:"trusted_left_seconds"`
	Released int            `json:"released"`
	Phases   map[string]int `json:"phases"`
}

func TestNodeClusterPositionsJournalAndDrain(t *testing.T) {
	db := storetest.NewDB(t)
	srv := newSim()
	sealer := newSealer(t)
	ctx := ctxT(t)
	must(t, store.CreateAccount(ctx, db.Pool, store.Account{ID: 1, Platform: "sim", Role: store.RoleMaster, Enabled: true, Login: "m1"}))
	for _, id := range []int64{101, 102} {
		must(t, store.CreateAccount(ctx, db.Pool, store.Account{ID: id, Platform: "sim", Role: store.RoleFollower, Enabled: true, Login: fmt.Sprintf("f%d", id)}))
		var settings []byte
		if id == 102 {
			settings = []byte(`{"filters": {"sides": "sell"}}`) // skips the buy below: its journal says so
		}
		_, err := store.CreateLink(ctx, db.Pool, store.Link{MasterID: 1, FollowerID: id, Enabled: true, Magic: 7000 + id, Settings: settings})
		must(t, err)
	}
	node := startNode(t, db, srv, sealer, "node-a", 10)
	e := newEnvWith(t, db, withNode(node), withControl(srv), func(o *console.Options) { o.Sealer = sealer })

	var n nodeJSON
	eventually(t, "node owns both followers", 15*time.Second, func() (bool, string) {
		r := e.do("GET", "/api/node", nil, bearer)
		r.json(t, &n)
		return n.Owned == 2 && n.GateOpen && n.Phases["copying"] == 2, r.body
	})
	if n.NodeID != "node-a" || n.State != "running" || !n.Claiming || n.Left <= 0 {
		t.Fatalf("node: %+v", n)
	}
	var cl struct {
		Nodes []struct {
			NodeID      string  `json:"node_id"`
			Accounts    int     `json:"accounts"`
			Live        int     `json:"live_leases"`
			LatestLeft  float64 `json:"latest_left_seconds"`
			ThisProcess bool    `json:"this_process"`
		} `json:"nodes"`
		Totals struct {
			Masters   int `json:"masters"`
			Followers int `json:"followers"`
		} `json:"totals"`
		ThisNode *nodeJSON `json:"this_node"`
	}
	e.do("GET", "/api/cluster", nil, bearer).json(t, &cl)
	if len(cl.Nodes) != 1 || cl.Nodes[0].NodeID != "node-a" || cl.Nodes[0].Accounts != 2 || cl.Nodes[0].Live != 2 ||
		!cl.Nodes[0].ThisProcess || cl.Nodes[0].LatestLeft <= 0 || cl.Totals.Masters != 1 || cl.Totals.Followers != 2 ||
		cl.ThisNode == nil || cl.ThisNode.NodeID != "node-a" {
		t.Fatalf("cluster: %+v", cl)
	}
	var list struct{ Accounts []accountJSON }
	e.do("GET", "/api/accounts?role=follower", nil, bearer).json(t, &list)
	for _, a := range list.Accounts {
		if a.Owner == nil || *a.Owner != "node-a" || a.Live == nil || a.Live.Phase != "copying" || a.Epoch != 1 {
			t.Fatalf("follower row: %+v", a)
		}
	}

	// A master trade is copied; the positions view pairs it with its copy and the journal
	// shows the order.
	pos, err := srv.MasterOpen(ctx, "m1", broker.MasterOpenRequest{Symbol: "EURUSD", Side: broker.Buy, Volume: 0.3})
	must(t, err)
	var pv struct {
		Available bool `json:"available"`
		Links     []struct {
			LinkID int64 `json:"link_id"`
			Pairs  []struct {
				Master *struct{ Ticket int64 } `json:"master"`
				Copies []struct {
					Ticket int64   `json:"ticket"`
					Volume float64 `json:"volume"`
				} `json:"copies"`
				State string `json:"state"`
			} `json:"pairs"`
		} `json:"links"`
	}
	eventually(t, "the copy shows beside the master position", 15*time.Second, func() (bool, string) {
		r := e.do("GET", "/api/accounts/101/positions", nil, bearer)
		r.json(t, &pv)
		ok := pv.Available && len(pv.Links) == 1 && len(pv.Links[0].Pairs) == 1 && pv.Links[0].Pairs[0].State == "copied" &&
			pv.Links[0].Pairs[0].Master.Ticket == pos.Ticket && pv.Links[0].Pairs[0].Copies[0].Volume == 0.3
		return ok, r.body
	})
	var jr struct {
		OwnedHere bool `json:"owned_here"`
		Journal   []struct {
			Action       string `json:"action"`
			MasterTicket int64  `json:"master_ticket"`
			Result       string `json:"result"`
		} `json:"journal"`
	}
	eventually(t, "the journal shows the order", 10*time.Second, func() (bool, string) {
		r := e.do("GET", "/api/accounts/101/journal", nil, bearer)
		r.json(t, &jr)
		return jr.OwnedHere && len(jr.Journal) > 0 && jr.Journal[0].MasterTicket == pos.Ticket && jr.Journal[0].Result == "ok", r.body
	})
	var sj struct {
		Journal []struct {
			Action       string `json:"action"`
			MasterTicket int64  `json:"master_ticket"`
			Result       string `json:"result"`
			Skip         string `json:"skip"`
		} `json:"journal"`
	}
	eventually(t, "the other follower's journal says why the buy was not copied", 10*time.Second, func() (bool, string) {
		r := e.do("GET", "/api/accounts/102/journal", nil, bearer)
		r.json(t, &sj)
		return len(sj.Journal) == 1 && sj.Journal[0].MasterTicket == pos.Ticket && sj.Journal[0].Result == "skipped" &&
			sj.Journal[0].Skip == "filtered_side" && strings.HasPrefix(sj.Journal[0].Action, "not copied (filtered_side): "), r.body
	})
	var nc struct {
		Counters struct {
			Skips int64 `json:"skips"`
		} `json:"counters"`
	}
	eventually(t, "the node counts the skip", 10*time.Second, func() (bool, string) {
		r := e.do("GET", "/api/node", nil, bearer)
		r.json(t, &nc)
		return nc.Counters.Skips == 1, r.body // the count follows the journal entry in the same step
	})
	var mp struct {
		Positions []struct{ Ticket int64 } `json:"positions"`
	}
	e.do("GET", "/api/accounts/1/positions", nil, bearer).json(t, &mp)
	if len(mp.Positions) != 1 || mp.Positions[0].Ticket != pos.Ticket {
		t.Fatalf("master positions: %+v", mp)
	}
	var detail struct {
		Journal []any `json:"journal"`
	}
	e.do("GET", "/api/accounts/101", nil, bearer).json(t, &detail)
	if len(detail.Journal) == 0 {
		t.Fatal("account detail has no journal")
	}

	// Pages.
	b := e.login()
	for path, wants := range map[string][]string{
		"/":             {`id="node-id">node-a`, "this process", `data-countdown=`, "Pause claiming", "Drain and stop this node"},
		"/accounts":     {`data-id="101"`, "node-a", `<span class="pill here">here</span>`, "copying"},
		"/accounts/101": {`id="journal-table"`, `class="pill state copied"`, fmt.Sprint(pos.Ticket), "this process"},
		"/accounts/102": {`<span class="pill warn" title="filtered_side">skipped</span>`, "not copied (filtered_side): "},
		"/accounts/1":   {"EURUSD", "No node runs this account now."},
	} {
		r := b.get(path)
		for _, w := range wants {
			if !strings.Contains(r.body, w) {
				t.Errorf("%s lacks %q", path, w)
			}
		}
	}

	// Pause and resume claiming.
	r := e.do("POST", "/api/node/claiming", rawBody(`{"claiming":false}`), bearer)
	r.json(t, &n)
	if r.status != 200 || n.State != "paused" || n.Claiming {
		t.Fatalf("pause: %d %s", r.status, r.body)
	}
	if r := b.get("/"); !strings.Contains(r.body, "Resume claiming") {
		t.Fatal("cluster page does not offer to resume")
	}
	csrf := b.csrf("/")
	if r := b.post("/node/claiming", url.Values{"csrf": {csrf}, "claiming": {"true"}}); r.status != http.StatusSeeOther {
		t.Fatalf("resume form: %d", r.status)
	}
	e.do("GET", "/api/node", nil, bearer).json(t, &n)
	if n.State != "running" || !n.Claiming {
		t.Fatalf("after resume: %+v", n)
	}
	for _, bad := range []string{`{}`, `{"claiming":"no"}`} {
		if r := e.do("POST", "/api/node/claiming", rawBody(bad), bearer); r.status/100 != 4 {
			t.Fatalf("claiming %s: %d", bad, r.status)
		}
	}

	// Drain: the node stops and hands its accounts back at once.
	r = e.do("POST", "/api/node/drain", nil, bearer)
	r.json(t, &n)
	if r.status != 200 || n.State != "stopped" || n.Released != 2 || n.Owned != 0 || n.GateOpen {
		t.Fatalf("drain: %d %s", r.status, r.body)
	}
	var held int
	must(t, db.Pool.QueryRow(ctx, `SELECT count(*) FROM trading_accounts WHERE node_id IS NOT NULL`).Scan(&held))
	if held != 0 {
		t.Fatalf("%d accounts still held after the drain", held)
	}
	if r := e.do("POST", "/api/node/claiming", rawBody(`{"claiming":true}`), bearer); r.status != http.StatusConflict || !strings.Contains(r.body, "restart") {
		t.Fatalf("claiming after drain: %d %s", r.status, r.body)
	}
	if r := e.do("POST", "/api/node/drain", nil, bearer); r.status != 200 {
		t.Fatalf("second drain: %d", r.status)
	}
	if r := b.get("/"); !strings.Contains(r.body, `id="node-state">stopped`) || strings.Contains(r.body, "Pause claiming") {
		t.Fatal("cluster page does not show the drained node")
	}
	if r := b.get("/accounts/101"); !strings.Contains(r.body, "No node runs this account now.") {
		t.Fatal("account page still shows the drained node's journal")
	}
	if !strings.Contains(e.logs.String(), "console: draining node") {
		t.Fatal("drain not logged")
	}
}

func TestPositionsUnavailableWithoutController(t *testing.T) {
	e := newEnv(t)
	e.seed(1, store.RoleFollower, "mt5", "f1")
	var pv struct {
		Available bool   `json:"available"`
		Reason    string `json:"reason"`
	}
	r := e.do("GET", "/api/accounts/1/positions", nil, bearer)
	r.json(t, &pv)
	if r.status != 200 || pv.Available || !strings.Contains(pv.Reason, "not available") {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if r := e.do("GET", "/api/accounts/2/positions", nil, bearer); r.status != 404 {
		t.Fatalf("missing account: %d", r.status)
	}
	if r := e.do("GET", "/api/accounts/2/journal", nil, bearer); r.status != 404 {
		t.Fatalf("missing account journal: %d", r.status)
	}
	b := e.login()
	if r := b.get("/accounts/1"); !strings.Contains(r.body, `id="positions-unavailable"`) || !strings.Contains(r.body, "no broker controller") {
		t.Fatal("page does not say positions are unavailable")
	}

	// Another node owns the follower and wrote what it saw: shown from the database.
	res, err := store.LeaseCycle(ctxT(t), e.pool, store.CycleRequest{Node: "other-node", Platform: "mt5", Lease: time.Minute, Capacity: 1})
	must(t, err)
	seen := time.Now().Truncate(time.Second)
	_, err = store.WriteSnapshotsFenced(ctxT(t), e.pool, "other-node", []store.PositionsSnapshot{{ID: 1, Epoch: res.Owned[0].Epoch, SeenAt: seen,
		Positions: []byte(`[{"ticket":4242,"symbol":"EURUSD","side":"buy","volume":0.3,"magic":7001,"comment":"mc17"}]`)}})
	must(t, err)
	var sv struct {
		Snapshot struct {
			Node      string    `json:"node"`
			SeenAt    time.Time `json:"seen_at"`
			Positions []struct {
				Ticket int64   `json:"ticket"`
				Volume float64 `json:"volume"`
			} `json:"positions"`
		} `json:"snapshot"`
	}
	r = e.do("GET", "/api/accounts/1/positions", nil, bearer)
	r.json(t, &sv)
	if sv.Snapshot.Node != "other-node" || !sv.Snapshot.SeenAt.Equal(seen) || len(sv.Snapshot.Positions) != 1 || sv.Snapshot.Positions[0].Ticket != 4242 {
		t.Fatalf("snapshot: %s", r.body)
	}
	if r := b.get("/accounts/1"); !strings.Contains(r.body, `id="positions-snapshot"`) || !strings.Contains(r.body, "4242") {
		t.Fatal("page does not show the positions snapshot")
	}
}

func TestCredentialsFunc(t *testing.T) {
	s := newSealer(t)
	sealed, err := s.Seal("pw")
	must(t, err)
	f := console.CredentialsFunc(s)
	fix := store.FIXSession{SenderCompID: "demo.b.1", SenderSubID: "s", TargetCompID: "cServer", TargetSubID: "TRADE", Username: "u1",
		Dialect: "fix44", PositionMode: "netting", Symbols: []store.FIXSymbol{{Name: "EURUSD", ID: "1", ContractSize: 100000, Digits: 5, MinLot: 0.01, LotStep: 0.01, MaxLot: 50}}}
	want := broker.FIXSession{SenderCompID: "demo.b.1", SenderSubID: "s", TargetCompID: "cServer", TargetSubID: "TRADE", Username: "u1",
		Dialect: "fix44", PositionMode: "netting", Symbols: []broker.FIXSymbol{{ID: "1", SymbolSpec: broker.SymbolSpec{Name: "EURUSD", ContractSize: 100000, Digits: 5, MinLot: 0.01, LotStep: 0.01, MaxLot: 50}}}}
	c, err := f(store.Account{ID: 1, Login: "l", Server: "srv", Credentials: sealed, FIX: fix})
	if err != nil || c.Password != "pw" || c.Login != "l" || c.Server != "srv" || !reflect.DeepEqual(c.FIX, want) {
		t.Fatalf("%+v %v", c, err)
	}
	if c, err := f(store.Account{ID: 1, Login: "l", FIX: fix}); err != nil || c.Password != "" || !reflect.DeepEqual(c.FIX, want) {
		t.Fatalf("no credentials: %+v %v", c, err)
	}
	if _, err := f(store.Account{ID: 1, Credentials: []byte("plain")}); err == nil {
		t.Fatal("unsealed credentials accepted")
	}
	if _, err := console.CredentialsFunc(nil)(store.Account{ID: 1, Credentials: sealed}); err == nil || !strings.Contains(err.Error(), console.EnvKey) {
		t.Fatalf("no sealer: %v", err)
	}
}
