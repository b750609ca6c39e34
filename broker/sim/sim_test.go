package sim_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/snapcopier/copier/broker/brokertest"
	"github.com/snapcopier/copier/broker/sim"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestConformance(t *testing.T) {
	brokertest.Run(t, func(t *testing.T) brokertest.Env {
		srv := sim.New(sim.Config{Seed: 1})
		return brokertest.Env{Broker: srv, Control: srv}
	})
}
