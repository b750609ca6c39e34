package actors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix"
	"github.com/snapcopier/copier/broker/fix/fixwire"
	"github.com/snapcopier/copier/broker/sim/fixfront"
	"github.com/snapcopier/copier/reconcile"
	"github.com/snapcopier/copier/store"
)

// followerBroker sends the followers' sessions to follower and every other (the
// masters') to the embedded broker.
type followerBroker struct {
	broker.Broker
	follower broker.Broker
	logins   map[string]bool
}

func (b *followerBroker) Connect(ctx context.Context, c broker.Credentials) (broker.Session, error) {
	if b.logins[c.Login] {
		return b.follower.Connect(ctx, c)
	}
	return b.Broker.Connect(ctx, c)
}

// TestFIX44FollowerWithoutCollateralInquiry: a netting follower on a standard FIX 4.4 venue
// that refuses CollateralInquiry (the simulator's strict front, dialect fix44) is
// reconciled with its equity unknown: the engine copies its master's position onto it and
// closes the copy with the master's, and the account's status is copying with its balance
// and equity stored as unknown (NULL), not 0.
func TestFIX44FollowerWithoutCollateralInquiry(t *testing.T) {
	c := newCluster(t, 1, 0)
	ctx := context.Background()
	const id, login = 1001, "f1001"
	must(t, store.CreateAccount(ctx, c.db.Pool, store.Account{ID: id, Platform: "sim", Role: store.RoleFollower, Enabled: true, Login: login}))
	must(t, c.sim.Provision(ctx, broker.AccountSpec{Login: login, Currency: "USD", Balance: 100_000, Leverage: 100, Mode: broker.Netting}))
	settings, _ := json.Marshal(reconcile.DefaultSettings())
	_, err := store.CreateLink(ctx, c.db.Pool, store.Link{MasterID: 1, FollowerID: id, Enabled: true, Magic: 7001, Settings: settings})
	must(t, err)

	front, err := fixfront.Start("127.0.0.1:0", c.sim, c.sim, fixfront.Options{Strict: true})
	must(t, err)
	t.Cleanup(func() { _ = front.Close() })
	sess, err := c.sim.Connect(ctx, broker.Credentials{Login: login})
	must(t, err)
	specs, err := sess.Symbols(ctx)
	must(t, err)
	_ = sess.Close()
	syms := make([]fix.Symbol, len(specs))
	for i, sp := range specs {
		syms[i] = fix.Symbol{SymbolSpec: sp, ID: strconv.Itoa(i + 1)} // the front numbers symbols in the simulator's order
	}
	fb, err := fix.New(fix.Config{Addr: front.Addr(), Dialect: fixwire.DialectFIX44, Symbols: syms, ReconnectMin: 20 * time.Millisecond})
	must(t, err)
	c.startOn("n1", 10, &followerBroker{Broker: c.sim, follower: fb, logins: map[string]bool{login: true}})

	held := func(want float64) func() (bool, string) {
		return func() (bool, string) {
			ps, err := c.sim.AccountPositions(ctx, login)
			must(t, err)
			got := 0.0
			for _, p := range ps {
				if p.Symbol == "EURUSD" && p.Side == broker.Buy {
					got += p.Volume
				}
			}
			return len(ps) == 0 && want == 0 || len(ps) == 1 && got > want-1e-9 && got < want+1e-9, fmt.Sprintf("follower positions %+v", ps)
		}
	}
	p := c.masterOpen(1, "EURUSD", broker.Buy, 0.1, 0, 0)
	c.eventually("the master's position copied to the fix44 follower", 30*time.Second, held(0.1))
	c.eventually("the follower reconciled and copying, its equity stored as unknown", 30*time.Second, func() (bool, string) {
		var status, lastErr string
		var balance, equity *float64
		must(t, c.db.Pool.QueryRow(ctx, `SELECT coalesce(status, ''), coalesce(last_error, ''), balance, equity FROM trading_accounts WHERE id = $1`, id).
			Scan(&status, &lastErr, &balance, &equity))
		return status == "copying" && balance == nil && equity == nil,
			fmt.Sprintf("status %q (last error %q), balance %v, equity %v", status, lastErr, balance, equity)
	})
	must(t, c.sim.MasterClose(ctx, "m1", p.Ticket, 0))
	c.eventually("the copy closed with the master's position", 30*time.Second, held(0))
}
