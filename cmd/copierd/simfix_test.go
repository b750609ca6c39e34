package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix"
)

// TestSimServesFIX: 'copierd sim --fix' serves the simulator as a FIX acceptor beside the
// bridge; a FIX broker logs on, trades and sees the position; the sim stops cleanly.
func TestSimServesFIX(t *testing.T) {
	simCLI := startCLI(t, "sim", "--listen", "127.0.0.1:0", "--fix", "127.0.0.1:0", "--log-level", "error")
	var addr string
	eventually(t, "FIX acceptor", 20*time.Second, func() string {
		if _, after, ok := strings.Cut(simCLI.stdout.String(), "sim FIX acceptor on "); ok {
			addr, _, _ = strings.Cut(after, " ")
			return ""
		}
		return "no 'sim FIX acceptor' line"
	})
	b, err := fix.New(fix.Config{Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := b.Connect(ctx, broker.Credentials{Login: "fix-cli", Password: "any"})
	if err != nil {
		t.Fatalf("connect over FIX: %v", err)
	}
	specs, err := s.Symbols(ctx)
	if err != nil || len(specs) == 0 {
		t.Fatalf("symbols: %v", err)
	}
	res, err := s.Open(ctx, broker.OpenRequest{Order: broker.Order{RequestID: uuid.New(), Token: 1}, Symbol: specs[0].Name, Side: broker.Buy, Volume: specs[0].MinLot})
	if err != nil {
		t.Fatalf("open over FIX: %v", err)
	}
	ps, err := s.Positions(ctx)
	if err != nil || len(ps) != 1 || ps[0].Ticket != res.Ticket {
		t.Fatalf("positions %+v, %v; want ticket %d", ps, err, res.Ticket)
	}
	_ = s.Close()
	if code := simCLI.stop(t, 10*time.Second); code != exitOK {
		t.Fatalf("sim exit %d: %s", code, simCLI.stderr.String())
	}

	code, _, errs := runCLI(t, nil, "sim", "--fix", "nope")
	if code != exitUsage || !strings.Contains(errs, `--fix "nope"`) {
		t.Fatalf("bad --fix: exit %d stderr %q", code, errs)
	}
}
