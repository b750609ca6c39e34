package fix_test

import (
	"testing"

	"github.com/snapcopier/copier/broker/brokertest"
)

// TestConformance runs the broker conformance suite over FIX on loopback: a fresh
// simulator behind a fresh FIX front, and a fresh FIX broker, for every subtest.
func TestConformance(t *testing.T) {
	brokertest.Run(t, func(t *testing.T) brokertest.Env {
		e := newEnv(t, envOptions{})
		return brokertest.Env{Broker: e.broker, Control: e.sim, NoTokenFence: true}
	})
}
