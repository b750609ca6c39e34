package fix_test

import (
	"testing"
	"time"

	"github.com/snapcopier/copier/broker/fix"
	"github.com/snapcopier/copier/broker/sim"
	"github.com/snapcopier/copier/broker/sim/fixfront"
)

// env is a simulator behind a FIX front on loopback and a FIX broker pointed at it.
type env struct {
	sim    *sim.Server
	front  *fixfront.Front
	broker *fix.Broker
}

type envOptions struct {
	front  fixfront.Options
	client fix.Config
	wire   func(raw string) // sees every message the client writes (fix.SetWire)
}

func newEnv(t *testing.T, o envOptions) *env {
	t.Helper()
	return newEnvFor(t, sim.New(sim.Config{Seed: 1, AutoProvision: true}), o)
}

// newEnvFor puts a FIX front in front of s.
func newEnvFor(t testing.TB, s *sim.Server, o envOptions) *env {
	t.Helper()
	f, err := fixfront.Start("127.0.0.1:0", s, s, o.front)
	if err != nil {
		t.Fatalf("start front: %v", err)
	}
	t.Cleanup(func() { _ = f.Close() })
	cfg := o.client
	cfg.Addr = f.Addr()
	if cfg.ReconnectMin == 0 {
		cfg.ReconnectMin = 20 * time.Millisecond
	}
	b, err := fix.New(cfg)
	if err != nil {
		t.Fatalf("fix broker: %v", err)
	}
	if o.wire != nil {
		fix.SetWire(b, o.wire)
	}
	return &env{sim: s, front: f, broker: b}
}
