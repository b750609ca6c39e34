// Package brokertest is a conformance suite for broker.Broker implementations: the
// in-process simulator, the network bridge in front of it, or anything else that offers a
// broker.Controller of the same server.
//
// The suite uses nothing but the two interfaces. It provisions its own accounts through
// Controller.Provision and assumes a server that offers at least one tradable symbol with
// room for a few lots above its minimum, accepts stops 5% away from the price, and makes
// a subscription live by the time Subscribe returns. Errors must be classified (one of
// the broker.Err* classes) and carry the broker.TradeError code of the condition.
//
// Usage, in the implementation's tests:
//
//	func TestConformance(t *testing.T) {
//		brokertest.Run(t, func(t *testing.T) brokertest.Env {
//			srv := sim.New(sim.Config{Seed: 1})
//			return brokertest.Env{Broker: srv, Control: srv}
//		})
//	}
package brokertest

import (
	"testing"

	"github.com/snapcopier/copier/broker"
)

// Env is what the suite needs: the Broker under test and a Controller of the same server.
type Env struct {
	Broker  broker.Broker
	Control broker.Controller
	// NoTokenFence: the venue cannot raise a fencing token without an order (FIX):
	// Session.Fence returns nil and changes nothing; tokens travel with orders only.
	NoTokenFence bool
}

// testCase is one conformance check.
type testCase struct {
	name string
	run  func(h *harness)
}

// Run runs the conformance suite as subtests of t; newEnv returns a fresh, independent
// server for each subtest (fault-free, options off). Resources newEnv creates should be
// released with t.Cleanup.
func Run(t *testing.T, newEnv func(t *testing.T) Env) {
	t.Helper()
	groups := [][]testCase{accountCases(), orderCases(), positionModeCases(), feedCases(), serverCases()}
	for _, group := range groups {
		for _, c := range group {
			t.Run(c.name, func(t *testing.T) {
				c.run(newHarness(t, newEnv(t)))
			})
		}
	}
}
