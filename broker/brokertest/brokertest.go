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
	"strings"
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
	RunExcept(t, nil, newEnv)
}

// Exclusions name the cases a broker cannot pass by design (a venue without a feature the
// case needs), each with the reason: case name → why.
type Exclusions map[string]string

// RunExcept runs the suite like Run, without the cases in except. The exclusions are part
// of the implementation's documentation: each needs a reason, and a name that is no case
// of the suite fails t (a renamed case cannot drop out unnoticed). An excluded case is not
// run, not skipped: the log names it and its reason.
func RunExcept(t *testing.T, except Exclusions, newEnv func(t *testing.T) Env) {
	t.Helper()
	groups := [][]testCase{accountCases(), orderCases(), positionModeCases(), feedCases(), serverCases()}
	known := map[string]bool{}
	for _, group := range groups {
		for _, c := range group {
			known[c.name] = true
		}
	}
	for name, why := range except {
		switch {
		case !known[name]:
			t.Fatalf("brokertest: excluded case %q is not a case of the suite", name)
		case strings.TrimSpace(why) == "":
			t.Fatalf("brokertest: excluded case %q needs a reason", name)
		}
	}
	for _, group := range groups {
		for _, c := range group {
			if why, out := except[c.name]; out {
				t.Logf("brokertest: %s excluded: %s", c.name, why)
				continue
			}
			t.Run(c.name, func(t *testing.T) {
				c.run(newHarness(t, newEnv(t)))
			})
		}
	}
}
