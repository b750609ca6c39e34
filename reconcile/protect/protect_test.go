package protect

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

type obs struct {
	after  time.Duration // since t0
	equity float64
	breach Reason // the stop-out this observation must raise ("" = none)
}

func run(t *testing.T, l Limits, s State, steps []obs) State {
	t.Helper()
	if err := l.Validate(); err != nil {
		t.Fatalf("limits: %v", err)
	}
	for i, o := range steps {
		var stop *StopOut
		s, stop = Observe(l, s, t0.Add(o.after), o.equity)
		switch {
		case o.breach == "" && stop != nil:
			t.Fatalf("step %d (equity %v): unexpected stop-out %+v", i, o.equity, *stop)
		case o.breach != "" && stop == nil:
			t.Fatalf("step %d (equity %v): no stop-out, want %s (state %+v)", i, o.equity, o.breach, s)
		case stop != nil && stop.Reason != o.breach:
			t.Fatalf("step %d: stop-out %s, want %s", i, stop.Reason, o.breach)
		}
	}
	return s
}

func TestDrawdownFromHighWater(t *testing.T) {
	l := Limits{Drawdown: &Drawdown{Percent: 10}}
	s := run(t, l, State{}, []obs{
		{0, 10_000, ""},
		{time.Minute, 12_000, ""},                 // new high-water mark
		{2 * time.Minute, 10_900, ""},             // 9.2 % below 12,000
		{3 * time.Minute, 10_800, ReasonDrawdown}, // 10 % below 12,000 (but only 1 % below the start)
		{4 * time.Minute, 9_000, ""},              // already stopped: no second stop-out
	})
	if !s.Stopped(t0.Add(time.Hour)) || s.Stop.Equity != 10_800 || s.Stop.Loss != 1_200 || !s.Stop.Until.IsZero() {
		t.Fatalf("stop-out %+v", *s.Stop)
	}
	if !s.Stop.At.Equal(t0.Add(3 * time.Minute)) {
		t.Fatalf("stop-out at %v", s.Stop.At)
	}
	// The operator's reset measures again from the equity at the reset.
	s, err := Reset(s, t0.Add(5*time.Minute), 9_000)
	if err != nil {
		t.Fatal(err)
	}
	run(t, l, s, []obs{{6 * time.Minute, 8_200, ""}, {7 * time.Minute, 8_100, ReasonDrawdown}})
}

func TestDrawdownAmountFromStartBalance(t *testing.T) {
	l := Limits{Drawdown: &Drawdown{Amount: 500, From: FromStartBalance, StartBalance: 10_000}}
	s := run(t, l, State{}, []obs{
		{0, 12_000, ""},
		{time.Minute, 10_000, ""}, // 2,000 below the high-water mark: not what this rule measures
		{2 * time.Minute, 9_501, ""},
		{3 * time.Minute, 9_500, ReasonDrawdown},
	})
	s, err := Reset(s, t0.Add(4*time.Minute), 9_400)
	if err != nil {
		t.Fatal(err)
	}
	// After the reset the fixed start balance is replaced by the equity at the reset.
	run(t, l, s, []obs{{5 * time.Minute, 8_901, ""}, {6 * time.Minute, 8_900, ReasonDrawdown}})
}

func TestDailyLossResetsAtTheConfiguredTimeInItsZone(t *testing.T) {
	// 17:00 New York: 22:00 UTC in winter, 21:00 UTC in summer. US clocks went forward on
	// 8 March 2026, so the day that starts on 8 March ends an hour earlier in UTC.
	l := Limits{DailyLoss: &DailyLoss{Amount: 300, ResetAt: "17:00", TimeZone: "America/New_York"}}
	day1 := time.Date(2026, 3, 7, 23, 0, 0, 0, time.UTC) // 18:00 EST, 7 March: day of 7 March
	at := func(utc time.Time) time.Duration { return utc.Sub(t0) }
	s := run(t, l, State{}, []obs{
		{at(day1), 10_000, ""},
		{at(day1.Add(20 * time.Hour)), 9_750, ""},                                 // 19:00 UTC 8 March = 15:00 EDT: same day
		{at(time.Date(2026, 3, 8, 20, 59, 0, 0, time.UTC)), 9_701, ""},            // 16:59 EDT
		{at(time.Date(2026, 3, 8, 21, 0, 0, 0, time.UTC)), 9_650, ""},             // 17:00 EDT: a new day starts at 9,650
		{at(time.Date(2026, 3, 9, 2, 0, 0, 0, time.UTC)), 9_351, ""},              // 299 lost today
		{at(time.Date(2026, 3, 9, 3, 0, 0, 0, time.UTC)), 9_350, ReasonDailyLoss}, // 300 lost today
	})
	wantUntil := time.Date(2026, 3, 9, 21, 0, 0, 0, time.UTC) // 17:00 EDT on 9 March
	if !s.Stop.Until.Equal(wantUntil) {
		t.Fatalf("daily stop-out until %v, want %v", s.Stop.Until.UTC(), wantUntil)
	}
	if !s.Stopped(wantUntil.Add(-time.Second)) || s.Stopped(wantUntil) {
		t.Fatal("the daily stop-out must last exactly until the next reset time")
	}
	// The next day copying resumes by itself, measured from that day's first equity.
	run(t, l, s, []obs{
		{at(wantUntil.Add(-time.Minute)), 9_000, ""}, // still stopped: no new stop-out
		{at(wantUntil.Add(time.Minute)), 9_100, ""},
		{at(wantUntil.Add(time.Hour)), 8_801, ""},
		{at(wantUntil.Add(2 * time.Hour)), 8_800, ReasonDailyLoss},
	})
}

func TestDailyLossPercentAndDrawdownTogether(t *testing.T) {
	l := Limits{Drawdown: &Drawdown{Percent: 20}, DailyLoss: &DailyLoss{Percent: 5}}
	// Day one loses 4 %, day two loses 4 % more: the daily limit never trips, the drawdown
	// from the mark does once the losses add up to 20 %.
	eq := 10_000.0
	var steps []obs
	for day := 0; day < 6; day++ {
		steps = append(steps, obs{time.Duration(day)*24*time.Hour + time.Hour, eq, ""})
		eq *= 0.96
		steps = append(steps, obs{time.Duration(day)*24*time.Hour + 2*time.Hour, eq, ""})
	}
	steps[len(steps)-1].breach = ReasonDrawdown // 10,000 × 0.96⁶ = 7,828: 21.7 % down
	s := run(t, l, State{}, steps)
	if !s.Stop.Until.IsZero() {
		t.Fatal("a drawdown stop-out lasts until an operator resets it")
	}
}

func TestObserveDuringStopKeepsTrackingTheDay(t *testing.T) {
	// A breach while the account is stopped raises nothing, but the high-water mark and the
	// day's start keep moving so that the state after the stop is current.
	l := Limits{DailyLoss: &DailyLoss{Amount: 100}}
	s := run(t, l, State{}, []obs{{0, 1_000, ""}, {time.Hour, 900, ReasonDailyLoss}, {2 * time.Hour, 800, ""}})
	next := time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC)
	if !s.Stop.Until.Equal(next) {
		t.Fatalf("until %v", s.Stop.Until)
	}
	s = run(t, l, s, []obs{{next.Sub(t0) + time.Minute, 850, ""}})
	if s.Stop != nil || s.DayEquity != 850 || !s.Day.Equal(next) || s.HighWater != 1_000 {
		t.Fatalf("state after the stop ran out: %+v", s)
	}
}

func TestResetOfAnAccountThatIsNotStopped(t *testing.T) {
	s := State{HighWater: 5}
	got, err := Reset(s, t0, 3)
	if !errors.Is(err, ErrNotStopped) || got != s {
		t.Fatalf("reset of a running state: %v, %+v", err, got)
	}
	expired := State{Stop: &StopOut{Reason: ReasonDailyLoss, Until: t0}}
	if _, err := Reset(expired, t0, 3); !errors.Is(err, ErrNotStopped) {
		t.Fatalf("reset of an expired daily stop-out: %v", err)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		json, field string // field: "" = valid
	}{
		{`{}`, ""},
		{`{"max_drawdown":{"percent":100}}`, ""},
		{`{"max_drawdown":{"amount":250,"from":"start_balance","start_balance":1000}}`, ""},
		{`{"daily_loss":{"percent":3,"reset_at":"22:00","time_zone":"Europe/London"},"close_only":"let_close"}`, ""},
		{`{"max_drawdown":{"percent":-1}}`, "max_drawdown.percent"},
		{`{"max_drawdown":{"percent":100.5}}`, "max_drawdown.percent"},
		{`{"max_drawdown":{"amount":-5}}`, "max_drawdown.amount"},
		{`{"max_drawdown":{}}`, "max_drawdown: set percent or amount"},
		{`{"max_drawdown":{"percent":5,"amount":5}}`, "not both"},
		{`{"max_drawdown":{"percent":5,"from":"start_balance"}}`, "max_drawdown.start_balance"},
		{`{"max_drawdown":{"percent":5,"start_balance":100}}`, "max_drawdown.start_balance"},
		{`{"max_drawdown":{"percent":5,"from":"peak"}}`, "max_drawdown.from"},
		{`{"daily_loss":{"amount":5,"time_zone":"Mars/Olympus"}}`, "daily_loss.time_zone"},
		{`{"daily_loss":{"amount":5,"time_zone":"Local"}}`, "daily_loss.time_zone"},
		{`{"daily_loss":{"amount":5,"reset_at":"25:00"}}`, "daily_loss.reset_at"},
		{`{"daily_loss":{"amount":5,"reset_at":"7pm"}}`, "daily_loss.reset_at"},
		{`{"close_only":"sometimes"}`, "close_only"},
	} {
		var l Limits
		if err := json.Unmarshal([]byte(tc.json), &l); err != nil {
			t.Fatalf("%s: %v", tc.json, err)
		}
		err := l.Validate()
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.json, err)
			}
			continue
		}
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: error %v, want one naming %q", tc.json, err, tc.field)
		}
	}
}

func TestSlippageWorseIsPositive(t *testing.T) {
	for _, tc := range []struct {
		buy          bool
		master, fill float64
		want         float64
	}{
		{true, 1.10000, 1.10003, 3},   // bought higher: worse
		{true, 1.10000, 1.09998, -2},  // bought lower: better
		{false, 1.10000, 1.09995, 5},  // sold lower: worse
		{false, 1.10000, 1.10001, -1}, // sold higher: better
	} {
		if got := Slippage(tc.buy, tc.master, tc.fill, 0.00001); got < tc.want-1e-6 || got > tc.want+1e-6 {
			t.Errorf("%+v: %v", tc, got)
		}
	}
	if Slippage(true, 1, 2, 0) != 0 {
		t.Error("a symbol without a point has no slippage in points")
	}
}

func TestStricter(t *testing.T) {
	modes := []CloseOnly{CopyNormally, LetClose, CloseNow}
	for i, a := range modes {
		for j, b := range modes {
			if got, want := Stricter(a, b), modes[max(i, j)]; got != want {
				t.Errorf("Stricter(%q, %q) = %q, want %q", a, b, got, want)
			}
		}
		if got := Stricter(a, "sometime"); got != CloseNow {
			t.Errorf("Stricter(%q, unknown) = %q, want close_now", a, got)
		}
	}
}
