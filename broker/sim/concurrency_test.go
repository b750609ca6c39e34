package sim_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/sim"
)

// TestManySessions: 2,000 sessions on 200 accounts (half hedging, half netting) open and
// close concurrently while every account's feed is watched. Positions, the order log and
// the feeds must agree afterwards.
func TestManySessions(t *testing.T) {
	const accounts, perAccount = 200, 10
	ctx := context.Background()
	srv := sim.New(sim.Config{Seed: 1})
	logins := make([]string, accounts)
	feeds := make([]<-chan broker.Event, accounts)
	for i := range logins {
		logins[i] = fmt.Sprintf("acct-%03d", i)
		mode := broker.Hedging
		if i%2 == 1 {
			mode = broker.Netting
		}
		provision(t, srv, broker.AccountSpec{Login: logins[i], Balance: 1e6, Mode: mode})
		feeds[i], _ = connect(t, srv, logins[i]).Subscribe(t.Context())
	}

	sessions := make([]broker.Session, 0, accounts*perAccount)
	for i := range accounts * perAccount {
		sessions = append(sessions, connect(t, srv, logins[i%accounts]))
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, s := range sessions {
		wg.Go(func() {
			<-start
			netting := i%accounts%2 == 1
			var tickets []int64
			for range 3 {
				res, err := s.Open(ctx, openReq("EURUSD", broker.Buy, 0.01))
				if err != nil {
					t.Errorf("open: %v", err)
					return
				}
				tickets = append(tickets, res.Ticket)
			}
			if netting { // reduce the one position by a sell
				_, err := s.Open(ctx, openReq("EURUSD", broker.Sell, 0.01))
				if err != nil {
					t.Errorf("netting sell: %v", err)
				}
				return
			}
			if _, err := s.ClosePosition(ctx, broker.CloseRequest{Order: ord(), Ticket: tickets[1]}); err != nil {
				t.Errorf("close: %v", err)
			}
		})
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}

	seen := map[int64]string{}
	for i, login := range logins {
		ps, err := srv.AccountPositions(ctx, login)
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			if len(ps) != 1 || ps[0].Side != broker.Buy || ps[0].Volume != 0.2 {
				t.Fatalf("%s (netting): %+v, want one buy of 0.2", login, ps)
			}
		} else if len(ps) != 2*perAccount {
			t.Fatalf("%s (hedging): %d positions, want %d", login, len(ps), 2*perAccount)
		}
		for _, p := range ps {
			if other, dup := seen[p.Ticket]; dup {
				t.Fatalf("ticket %d held by %s and %s", p.Ticket, other, login)
			}
			seen[p.Ticket] = login
		}
	}

	log, err := srv.OrderLog(ctx, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := accounts * perAccount * 4; len(log) != want {
		t.Fatalf("order log has %d entries, want %d", len(log), want)
	}
	perLogin := map[string]int{}
	ids := map[[16]byte]bool{}
	for i, e := range log {
		if e.Seq != int64(i+1) || !e.Executed || e.Duplicate || e.Node != "test" || ids[e.RequestID] {
			t.Fatalf("log entry %d: %+v", i, e)
		}
		ids[e.RequestID] = true
		perLogin[e.Login]++
	}
	for _, login := range logins {
		if perLogin[login] != perAccount*4 {
			t.Fatalf("%s has %d log entries, want %d", login, perLogin[login], perAccount*4)
		}
	}

	// Every account's feed saw every change, numbered without gaps: hedging 30 opens and
	// 10 closes; netting 1 open, 29 additions and 10 reductions.
	for i, f := range feeds {
		for seq := int64(1); seq <= perAccount*4; seq++ {
			if ev := recv(t, f); ev.Seq != seq || ev.Login != logins[i] {
				t.Fatalf("%s: event %+v, want Seq %d", logins[i], ev, seq)
			}
		}
	}
}

// TestFaultsKeepLogTruthful: under requotes, timeouts and disconnects from many sessions,
// the order log's Executed flags still explain every account's positions exactly.
func TestFaultsKeepLogTruthful(t *testing.T) {
	const accounts, perAccount, ops = 20, 5, 30
	ctx := context.Background()
	srv := sim.New(sim.Config{Seed: 42, Faults: broker.Faults{RequoteRate: 0.1, TimeoutRate: 0.2, DisconnectRate: 0.05, DropEventRate: 0.1}})
	for i := range accounts {
		provision(t, srv, broker.AccountSpec{Login: fmt.Sprintf("f-%02d", i), Balance: 1e6, Mode: broker.Hedging})
	}
	var wg sync.WaitGroup
	for i := range accounts * perAccount {
		s := connect(t, srv, fmt.Sprintf("f-%02d", i%accounts))
		wg.Go(func() {
			var open []int64
			for k := range ops {
				if k%3 == 2 && len(open) > 0 {
					_, err := s.ClosePosition(ctx, broker.CloseRequest{Order: ord(), Ticket: open[0]})
					if err == nil || errors.Is(err, broker.ErrUnknownOutcome) {
						open = open[1:] // closed, or maybe closed: never retried
					}
					continue
				}
				res, err := s.Open(ctx, openReq("EURUSD", broker.Buy, 0.01))
				if err == nil {
					open = append(open, res.Ticket)
				}
			}
		})
	}
	// Feeds come and go while the orders run, and stop when they are done.
	feedCtx, stopFeeds := context.WithCancel(ctx)
	var feeds sync.WaitGroup
	for i := range accounts {
		s := connect(t, srv, fmt.Sprintf("f-%02d", i))
		feeds.Go(func() {
			for feedCtx.Err() == nil {
				f, err := s.Subscribe(feedCtx)
				if err != nil {
					continue
				}
				last := int64(0)
				for ev := range f {
					if ev.Seq <= last {
						t.Errorf("Seq %d after %d", ev.Seq, last)
					}
					last = ev.Seq
				}
			}
		})
	}
	wg.Wait()
	stopFeeds()
	feeds.Wait()

	log, _ := srv.OrderLog(ctx, 0, 0)
	open := map[string]map[int64]bool{}
	for _, e := range log {
		if open[e.Login] == nil {
			open[e.Login] = map[int64]bool{}
		}
		if !e.Executed {
			continue
		}
		switch e.Op {
		case broker.OpOpen:
			open[e.Login][e.Ticket] = true
		case broker.OpClose:
			delete(open[e.Login], e.Ticket)
		}
	}
	for login, want := range open {
		ps, _ := srv.AccountPositions(ctx, login)
		if len(ps) != len(want) {
			t.Fatalf("%s: %d positions, the log explains %d", login, len(ps), len(want))
		}
		for _, p := range ps {
			if !want[p.Ticket] {
				t.Fatalf("%s: position %d is not in the log", login, p.Ticket)
			}
		}
	}
}
