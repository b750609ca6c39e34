package fix_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix"
	"github.com/snapcopier/copier/internal/testwait"
)

// TestConnectedFollowsTheSessions: Broker.Connected (readiness) is nil before any session
// and while one is logged on; once the venue stops it names the venue, and a session that
// cannot log on at all makes it fail too; a session its owner closes does not.
func TestConnectedFollowsTheSessions(t *testing.T) {
	e := newEnv(t, envOptions{})
	if err := e.broker.Connected(); err != nil {
		t.Fatalf("no session yet: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	closed, err := e.broker.Connect(ctx, broker.Credentials{Login: "h1", Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	_ = closed.Close()
	if err := e.broker.Connected(); err != nil {
		t.Fatalf("after a session its owner closed: %v", err)
	}
	s, err := e.broker.Connect(ctx, broker.Credentials{Login: "h2", Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := e.broker.Connected(); err != nil {
		t.Fatalf("logged on: %v", err)
	}
	_ = e.front.Close()
	testwait.For(t, "Connected names the stopped venue", 30*time.Second, func() (bool, string) {
		err := e.broker.Connected()
		return err != nil && strings.Contains(err.Error(), "no session logged on to "+e.front.Addr()), errString(err)
	})

	// A venue that is not there: the failed first logon is reported.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	_ = l.Close()
	b, err := fix.New(fix.Config{Addr: dead})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Connect(ctx, broker.Credentials{Login: "h3", Password: "pw"}); err == nil {
		t.Fatal("logged on to a closed port")
	}
	if err := b.Connected(); err == nil || !strings.Contains(err.Error(), "cannot log on") {
		t.Fatalf("after a failed logon: %v, want the failure", err)
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
