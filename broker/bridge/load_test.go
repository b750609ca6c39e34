package bridge_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/bridge"
)

// TestManySessionsOneConnection runs 2,000 sessions concurrently over one client
// connection, each opening and closing a position, and checks every reply against the
// server's order log: no reply lost, duplicated or delivered to the wrong caller.
func TestManySessionsOneConnection(t *testing.T) {
	const sessions = 2000
	s := newSim()
	ts := startServer(t, "127.0.0.1:0", s, s, bridge.ServerOptions{})
	c := dial(t, ts.addr, bridge.ClientOptions{RequestTimeout: 60 * time.Second})
	ctx := t.Context()

	type trade struct {
		login         string
		openID        uuid.UUID
		closeID       uuid.UUID
		ticket        int64
		closedTicket  int64
		closedVolume  float64
		positionsLeft int
	}
	trades := make([]trade, sessions)
	errs := make(chan error, sessions)
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Go(func() {
			tr := &trades[i]
			tr.login = fmt.Sprintf("load-%04d", i)
			errs <- func() error {
				sess, err := c.Connect(ctx, broker.Credentials{Login: tr.login})
				if err != nil {
					return fmt.Errorf("%s: connect: %w", tr.login, err)
				}
				defer sess.Close()
				req := openReq(broker.Side(1 - 2*(i%2)))
				req.Magic = int64(i)
				tr.openID = req.RequestID
				res, err := sess.Open(ctx, req)
				if err != nil {
					return fmt.Errorf("%s: open: %w", tr.login, err)
				}
				tr.ticket = res.Ticket
				cl := broker.CloseRequest{Order: order(), Ticket: res.Ticket}
				tr.closeID = cl.RequestID
				cres, err := sess.ClosePosition(ctx, cl)
				if err != nil {
					return fmt.Errorf("%s: close: %w", tr.login, err)
				}
				tr.closedTicket, tr.closedVolume = cres.Ticket, cres.Volume
				ps, err := sess.Positions(ctx)
				if err != nil {
					return fmt.Errorf("%s: positions: %w", tr.login, err)
				}
				tr.positionsLeft = len(ps)
				return sess.Close()
			}()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	log, err := c.OrderLog(ctx, 0, 0)
	if err != nil {
		t.Fatalf("OrderLog: %v", err)
	}
	if len(log) != 2*sessions {
		t.Fatalf("order log has %d entries, want %d", len(log), 2*sessions)
	}
	byID := make(map[uuid.UUID]broker.OrderLogEntry, len(log))
	for _, e := range log {
		if _, dup := byID[e.RequestID]; dup {
			t.Fatalf("request %s logged twice", e.RequestID)
		}
		if !e.Executed || e.Duplicate {
			t.Fatalf("log entry %+v did not execute once", e)
		}
		byID[e.RequestID] = e
	}
	tickets := make(map[int64]string, sessions)
	for i, tr := range trades {
		op, cl := byID[tr.openID], byID[tr.closeID]
		switch {
		case op.Op != broker.OpOpen || op.Login != tr.login || op.Ticket != tr.ticket || op.Magic != int64(i):
			t.Fatalf("%s: open reply ticket %d, but the log says %+v", tr.login, tr.ticket, op)
		case cl.Op != broker.OpClose || cl.Login != tr.login || cl.Ticket != tr.ticket || tr.closedTicket != tr.ticket || tr.closedVolume != 0.01:
			t.Fatalf("%s: close reply ticket %d volume %v, but the log says %+v", tr.login, tr.closedTicket, tr.closedVolume, cl)
		case tr.positionsLeft != 0:
			t.Fatalf("%s: %d positions left", tr.login, tr.positionsLeft)
		}
		if other, dup := tickets[tr.ticket]; dup {
			t.Fatalf("ticket %d went to %s and %s", tr.ticket, other, tr.login)
		}
		tickets[tr.ticket] = tr.login
	}
	for i := 0; i < sessions; i += 97 {
		ps, err := s.AccountPositions(context.Background(), trades[i].login)
		if err != nil || len(ps) != 0 {
			t.Fatalf("%s: positions %+v, %v", trades[i].login, ps, err)
		}
	}
}
