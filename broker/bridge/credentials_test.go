package bridge_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/bridge"
)

// credsBroker hands every Connect's credentials to seen, then connects the wrapped broker.
type credsBroker struct {
	broker.Broker
	seen chan broker.Credentials
}

func (b credsBroker) Connect(ctx context.Context, c broker.Credentials) (broker.Session, error) {
	b.seen <- c
	return b.Broker.Connect(ctx, c)
}

// The credentials reach the server's broker whole: an account's FIX session settings
// travel with its login, server and password (a bridge in front of a FIX broker), its
// dialect, symbol list and position mode included, and an account without them arrives without them.
func TestConnectCarriesCredentials(t *testing.T) {
	s := newSim()
	cb := credsBroker{Broker: s, seen: make(chan broker.Credentials, 1)}
	ts := startServer(t, "127.0.0.1:0", cb, s, bridge.ServerOptions{})
	c := dial(t, ts.addr, bridge.ClientOptions{})
	for _, want := range []broker.Credentials{
		{Login: "cr-1", Server: "venue", Password: "pw",
			FIX: broker.FIXSession{SenderCompID: "demo.venue.1", SenderSubID: "desk", TargetCompID: "cServer", TargetSubID: "TRADE", Username: "1"}},
		{Login: "cr-2", Server: "venue", Password: "pw", FIX: broker.FIXSession{Username: "only-the-user"}},
		{Login: "cr-5", Server: "venue", Password: "pw", FIX: broker.FIXSession{PositionMode: "hedging"}},
		{Login: "cr-4", Server: "venue", Password: "pw", FIX: broker.FIXSession{Dialect: "fix44", PositionMode: "netting", Symbols: []broker.FIXSymbol{
			{ID: "1", SymbolSpec: broker.SymbolSpec{Name: "EURUSD", ContractSize: 100000, Digits: 5, MinLot: 0.01, LotStep: 0.01, MaxLot: 50}},
			{SymbolSpec: broker.SymbolSpec{Name: "XAUUSD", ContractSize: 100, Digits: 2, MinLot: 0.1, LotStep: 0.1}}}}},
		{Login: "cr-3", Server: "sim", Password: "pw"},
	} {
		sess, err := c.Connect(t.Context(), want)
		if err != nil {
			t.Fatalf("connect %s: %v", want.Login, err)
		}
		if got := <-cb.seen; !reflect.DeepEqual(got, want) {
			t.Errorf("the server's broker got %+v, want %+v", got, want)
		}
		_ = sess.Close()
	}
}
