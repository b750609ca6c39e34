package bridge_test

import (
	"testing"

	"github.com/snapcopier/copier/broker/bridge"
	"github.com/snapcopier/copier/broker/brokertest"
	"github.com/snapcopier/copier/broker/sim"
)

// TestConformance runs the broker conformance suite through the bridge on loopback: a
// fresh simulator behind a fresh server and client for every subtest.
func TestConformance(t *testing.T) {
	brokertest.Run(t, func(t *testing.T) brokertest.Env {
		s := sim.New(sim.Config{Seed: 1, AutoProvision: true})
		ts := startServer(t, "127.0.0.1:0", s, s, bridge.ServerOptions{})
		c := dial(t, ts.addr, bridge.ClientOptions{})
		return brokertest.Env{Broker: c, Control: c}
	})
}
