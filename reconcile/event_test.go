package reconcile

import (
	"reflect"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
)

func TestPlanEvent(t *testing.T) {
	base := func() Input {
		in := testInput(broker.Hedging)
		in.Master.Positions = []broker.Position{mpos(501, "EURUSD", broker.Buy, 0.4, time.Hour)}
		in.Follower.Positions = []broker.Position{copyOf(7001, 501, "EURUSD", broker.Buy, 0.4)}
		in.TicketMap = []TicketMapEntry{{LinkID: 1, MasterTicket: 501, FollowerTicket: 7001, Volume: 1}}
		return in
	}
	fresh := mpos(502, "EURUSD", broker.Sell, 0.2, 0)
	reduced := mpos(501, "EURUSD", broker.Buy, 0.1, time.Hour)
	modified := mpos(501, "EURUSD", broker.Buy, 0.4, time.Hour)
	modified.SL = 1.09
	cases := []struct {
		name string
		ev   broker.Event
		want []ActionKind
	}{
		{"opened", broker.Event{Kind: broker.Opened, Position: fresh}, []ActionKind{Open}},
		{"opened again (replay)", broker.Event{Kind: broker.Opened, Position: base().Master.Positions[0]}, []ActionKind{}},
		{"partially closed", broker.Event{Kind: broker.PartiallyClosed, Position: reduced}, []ActionKind{PartialClose}},
		{"modified", broker.Event{Kind: broker.Modified, Position: modified}, []ActionKind{Modify}},
		{"closed", broker.Event{Kind: broker.Closed, Position: base().Master.Positions[0]}, []ActionKind{Close}},
		{"closed, unknown ticket", broker.Event{Kind: broker.Closed, Position: mpos(499, "EURUSD", broker.Buy, 1, 0)}, []ActionKind{}},
		{"other account", broker.Event{Login: "someone", Kind: broker.Opened, Position: fresh}, []ActionKind{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := base()
			res := PlanEvent(tc.ev, in)
			if got := kinds(res); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("actions %v, want %v (skips %v)", res.Actions, tc.want, res.Skipped)
			}
			if len(in.Master.Positions) != 1 || in.Master.Positions[0].Volume != 0.4 {
				t.Fatalf("PlanEvent changed the caller's positions: %v", in.Master.Positions)
			}
		})
	}
}

// TestPlanAppendsToTheLentRoom: a plan given ActionRoom puts its actions in that array,
// whatever it held, and plans as it does without one.
func TestPlanAppendsToTheLentRoom(t *testing.T) {
	in := testInput(broker.Hedging)
	in.Master.Positions = []broker.Position{mpos(501, "EURUSD", broker.Buy, 0.4, 0), mpos(502, "EURUSD", broker.Sell, 0.2, 0)}
	want := Plan(in)
	if len(want.Actions) != 2 {
		t.Fatalf("plan without room: %v", want.Actions)
	}
	room := make([]Action, 3, 4)
	room[0] = Action{Kind: Close, MasterTicket: 9} // an earlier plan's, done
	in.ActionRoom = room
	got := Plan(in)
	if !reflect.DeepEqual(got.Actions, want.Actions) {
		t.Fatalf("plan in the lent room: %v, want %v", got.Actions, want.Actions)
	}
	if &got.Actions[0] != &room[0] {
		t.Fatal("the plan's actions are not in the lent array")
	}
}

// TestPlanEventScope: the event path acts for the event's master ticket only; the rest is
// the reconcile's.
func TestPlanEventScope(t *testing.T) {
	in := testInput(broker.Hedging)
	in.Master.Positions = []broker.Position{mpos(501, "EURUSD", broker.Buy, 0.4, time.Second)} // missed: not copied
	in.Follower.Positions = []broker.Position{copyOf(7009, 400, "EURUSD", broker.Buy, 0.4)}    // orphan
	res := PlanEvent(broker.Event{Kind: broker.Opened, Position: mpos(502, "EURUSD", broker.Sell, 0.2, 0)}, in)
	if len(res.Actions) != 1 || res.Actions[0].MasterTicket != 502 {
		t.Fatalf("actions %v", res.Actions)
	}
	if full := Plan(in); len(full.Actions) != 2 {
		t.Fatalf("reconcile actions %v", full.Actions)
	}
}

func TestPlanEventNetting(t *testing.T) {
	in := testInput(broker.Netting)
	in.Master.Positions = []broker.Position{mpos(501, "EURUSD", broker.Buy, 0.5, time.Hour)}
	in.Follower.Positions = []broker.Position{netPos(7001, broker.Buy, 0.5, 501)}
	in.TicketMap = []TicketMapEntry{{LinkID: 1, MasterTicket: 501, FollowerTicket: 7001, Volume: 1}}
	res := PlanEvent(broker.Event{Kind: broker.Opened, Position: mpos(502, "EURUSD", broker.Sell, 0.2, 0)}, in)
	if len(res.Actions) != 1 || res.Actions[0].Kind != PartialClose || res.Actions[0].Volume != 0.2 { // 0.5 − 0.2 = 0.3: close 0.2
		t.Fatalf("actions %v", res.Actions)
	}
	res = PlanEvent(broker.Event{Kind: broker.Closed, Position: in.Master.Positions[0]}, in)
	if len(res.Actions) != 1 || res.Actions[0].Kind != Close || len(res.Untrack) != 1 {
		t.Fatalf("actions %v, untrack %v", res.Actions, res.Untrack)
	}
}

func TestApplyEvent(t *testing.T) {
	ps := []broker.Position{mpos(1, "EURUSD", broker.Buy, 1, 0), mpos(2, "EURUSD", broker.Buy, 1, 0)}
	got := ApplyEvent(ps, broker.Event{Kind: broker.PartiallyClosed, Position: mpos(2, "EURUSD", broker.Buy, 0.5, 0)})
	if len(got) != 2 || got[1].Volume != 0.5 || ps[1].Volume != 1 {
		t.Fatalf("partial close: %v (input %v)", got, ps)
	}
	if got := ApplyEvent(ps, broker.Event{Kind: broker.Closed, Position: ps[0]}); len(got) != 1 || got[0].Ticket != 2 {
		t.Fatalf("close: %v", got)
	}
}

// TestSeveralLinksIntoOneFollower: two masters copy into one hedging follower; each link
// plans its own copies only, and a ticket number both masters use does not confuse them.
func TestSeveralLinksIntoOneFollower(t *testing.T) {
	f := &follower{mode: broker.Hedging}
	a := testInput(broker.Hedging)
	b := testInput(broker.Hedging)
	b.Link = Link{ID: 2, Magic: 1002, Settings: DefaultSettings()}
	b.Link.Settings.Sizing.Multiplier = 2
	a.Master.Positions = []broker.Position{mpos(501, "EURUSD", broker.Buy, 0.1, time.Second)}
	b.Master.Positions = []broker.Position{mpos(501, "EURUSD", broker.Sell, 0.1, time.Second)} // same ticket number, other server
	for round := 0; round < 2; round++ {
		for _, in := range []*Input{&a, &b} {
			in.Follower.Positions, in.TicketMap = f.positions, f.ticketMap
			res := Plan(*in)
			if round == 1 && !res.Converged() {
				t.Fatalf("link %d round 2: %v", in.Link.ID, res.Actions)
			}
			f.execute(in.Link.ID, res, now())
		}
	}
	if len(f.positions) != 2 {
		t.Fatalf("follower positions %v", f.positions)
	}
	a.Master.Positions = nil // master A closes
	a.Follower.Positions, a.TicketMap = f.positions, f.ticketMap
	res := Plan(a)
	if len(res.Actions) != 1 || res.Actions[0].Kind != Close || res.Actions[0].Side != broker.Buy {
		t.Fatalf("link 1 after its master closed: %v", res.Actions)
	}
}
