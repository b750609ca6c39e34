package fix_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix"
	"github.com/snapcopier/copier/broker/sim/fixfront"
)

// TestTokenOnLogon: Config.Token travels in every Logon's RawData (96), so a venue that
// requires a token (`copierd sim --token`) accepts the node's logons; without it, or with
// another, the logon is refused as an auth failure naming RawData; a token FIX cannot
// carry is refused by New.
func TestTokenOnLogon(t *testing.T) {
	const token = "node-token"
	e := newEnv(t, envOptions{front: fixfront.Options{Token: token}, client: fix.Config{Token: token}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := e.broker.Connect(ctx, broker.Credentials{Login: "tok", Password: "pw"})
	if err != nil {
		t.Fatalf("logon with the token: %v", err)
	}
	if _, err := s.Positions(ctx); err != nil {
		t.Fatalf("positions after a logon with the token: %v", err)
	}
	_ = s.Close()

	for name, tok := range map[string]string{"no token": "", "another token": "node-tokem"} {
		b, err := fix.New(fix.Config{Addr: e.front.Addr(), Token: tok})
		if err != nil {
			t.Fatal(err)
		}
		_, err = b.Connect(ctx, broker.Credentials{Login: "tok", Password: "pw"})
		var te *broker.TradeError
		if !errors.As(err, &te) || te.Code != broker.CodeAuthFailed || !strings.Contains(err.Error(), "RawData (96)") {
			t.Errorf("%s: %v, want CodeAuthFailed naming RawData (96)", name, err)
		}
		if err := b.Connected(); err == nil || !strings.Contains(err.Error(), "logon refused") {
			t.Errorf("%s: Connected %v, want the refusal", name, err)
		}
	}
	if _, err := fix.New(fix.Config{Addr: e.front.Addr(), Token: "a\x01b"}); err == nil || !strings.Contains(err.Error(), "SOH") {
		t.Fatalf("a token with SOH: %v, want an error naming SOH", err)
	}
}
