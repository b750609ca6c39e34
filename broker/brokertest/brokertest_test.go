package brokertest_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/brokertest"
	"github.com/snapcopier/copier/broker/sim"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func simEnv(t *testing.T) brokertest.Env {
	srv := sim.New(sim.Config{Seed: 7})
	return brokertest.Env{Broker: srv, Control: srv}
}

func TestSuiteAgainstSim(t *testing.T) {
	brokertest.Run(t, simEnv)
}

// brokenEnvVar selects, in a child process, the defect to run the suite against.
const brokenEnvVar = "BROKERTEST_DEFECT"

// TestSuiteCatchesDefects runs the suite, in child processes, against brokers with one
// defect each and expects the named subtest to fail.
func TestSuiteCatchesDefects(t *testing.T) {
	if defect := os.Getenv(brokenEnvVar); defect != "" {
		brokertest.Run(t, func(t *testing.T) brokertest.Env {
			env := simEnv(t)
			env.Broker = defectiveBroker{Broker: env.Broker, defect: defect}
			return env
		})
		return
	}
	cases := map[string]string{
		"unclassified-errors": "VolumeRules",
		"gaps-hidden":         "FeedDroppedEventGap",
		"position-missing":    "HedgingKeepsPositionsApart",
	}
	for defect, subtest := range cases {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestSuiteCatchesDefects$", "-test.v")
		cmd.Env = append(os.Environ(), brokenEnvVar+"="+defect)
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Errorf("the suite passed a broker with defect %s", defect)
			continue
		}
		if !strings.Contains(string(out), "--- FAIL: TestSuiteCatchesDefects/"+subtest+" ") {
			t.Errorf("defect %s: subtest %s did not fail:\n%s", defect, subtest, out)
		}
	}
}

// defectiveBroker wraps a correct broker and breaks one thing.
type defectiveBroker struct {
	broker.Broker
	defect string
}

func (b defectiveBroker) Connect(ctx context.Context, creds broker.Credentials) (broker.Session, error) {
	s, err := b.Broker.Connect(ctx, creds)
	if err != nil {
		return nil, err
	}
	return defectiveSession{Session: s, defect: b.defect}, nil
}

type defectiveSession struct {
	broker.Session
	defect string
}

// Open loses the error classification.
func (s defectiveSession) Open(ctx context.Context, req broker.OpenRequest) (broker.OrderResult, error) {
	res, err := s.Session.Open(ctx, req)
	if err != nil && s.defect == "unclassified-errors" {
		err = errors.New(err.Error())
	}
	return res, err
}

// Positions forgets the newest position.
func (s defectiveSession) Positions(ctx context.Context) ([]broker.Position, error) {
	ps, err := s.Session.Positions(ctx)
	if s.defect == "position-missing" && len(ps) > 1 {
		ps = ps[:len(ps)-1]
	}
	return ps, err
}

// Subscribe renumbers events so that gaps disappear.
func (s defectiveSession) Subscribe(ctx context.Context) (<-chan broker.Event, error) {
	in, err := s.Session.Subscribe(ctx)
	if err != nil || s.defect != "gaps-hidden" {
		return in, err
	}
	out := make(chan broker.Event)
	go func() {
		defer close(out)
		seq := int64(0)
		for ev := range in {
			seq++
			ev.Seq = seq
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// exclusionsEnvVar selects, in a child process, the exclusions to run the suite with.
const exclusionsEnvVar = "BROKERTEST_EXCLUSIONS"

// TestExclusionsChecked: RunExcept leaves an excluded case out (not run, not skipped: the
// log names it with its reason), and fails on an exclusion that names no case of the suite
// or gives no reason.
func TestExclusionsChecked(t *testing.T) {
	if which := os.Getenv(exclusionsEnvVar); which != "" {
		except := map[string]brokertest.Exclusions{
			"one-out":   {"ConcurrentOrders": "the reason"},
			"unknown":   {"NoSuchCase": "a reason"},
			"no-reason": {"Symbols": " "},
		}[which]
		brokertest.RunExcept(t, except, simEnv)
		return
	}
	for which, c := range map[string]struct {
		pass bool
		want string
	}{
		"one-out":   {true, "brokertest: ConcurrentOrders excluded: the reason"},
		"unknown":   {false, `excluded case "NoSuchCase" is not a case of the suite`},
		"no-reason": {false, `excluded case "Symbols" needs a reason`},
	} {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestExclusionsChecked$", "-test.v")
		cmd.Env = append(os.Environ(), exclusionsEnvVar+"="+which)
		out, err := cmd.CombinedOutput()
		if (err == nil) != c.pass || !strings.Contains(string(out), c.want) {
			t.Errorf("%s: error %v, want passing %v and the output naming %q:\n%s", which, err, c.pass, c.want, out)
		}
		if which == "one-out" && (strings.Contains(string(out), "TestExclusionsChecked/ConcurrentOrders") || !strings.Contains(string(out), "--- PASS: TestExclusionsChecked/OrderLog")) {
			t.Errorf("one-out: the excluded case ran, or the others did not:\n%s", out)
		}
	}
}
