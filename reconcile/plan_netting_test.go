package reconcile

import (
	"reflect"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
)

// netPos is the link's netting position on EURUSD.
func netPos(ticket int64, side broker.Side, volume float64, marker int64) broker.Position {
	return broker.Position{Ticket: ticket, Symbol: "EURUSD", Side: side, Volume: volume, OpenPrice: 1.10010,
		Magic: 1001, Comment: Marker(marker), OpenTime: now().Add(-time.Minute)}
}

func TestNettingOpensNetOfNewPositions(t *testing.T) {
	in := testInput(broker.Netting)
	in.Master.Positions = []broker.Position{
		mpos(501, "EURUSD", broker.Buy, 0.5, 3*time.Second),
		mpos(502, "EURUSD", broker.Buy, 0.3, 2*time.Second),
		mpos(503, "EURUSD", broker.Sell, 0.2, 1*time.Second),
	}
	res := Plan(in)
	// 0.5 + 0.3 − 0.2 = 0.6 lots buy, in one position marked with the oldest buy
	want := Action{Kind: Open, Reason: ReasonCopyMissing, MasterTicket: 501, Symbol: "EURUSD", Side: broker.Buy, Volume: 0.6,
		Magic: 1001, Comment: "mc501", Price: 1.10010,
		Track: []Tracked{{501, 1}, {502, 1}, {503, 1}}}
	if len(res.Actions) != 1 || !reflect.DeepEqual(res.Actions[0], want) {
		t.Fatalf("actions %v\nwant %v", res.Actions, want)
	}
}

func TestNettingAdjustsTowardTarget(t *testing.T) {
	tracked := func(ts ...int64) []TicketMapEntry {
		var es []TicketMapEntry
		for _, t := range ts {
			es = append(es, TicketMapEntry{LinkID: 1, MasterTicket: t, FollowerTicket: 7001, Volume: 1})
		}
		return es
	}
	cases := []struct {
		name    string
		masters []broker.Position
		pos     broker.Position
		entries []TicketMapEntry
		want    []Action // compared on Kind, Side, Volume, FollowerTicket
	}{
		{name: "converged",
			masters: []broker.Position{mpos(501, "EURUSD", broker.Buy, 0.5, time.Hour)},
			pos:     netPos(7001, broker.Buy, 0.5, 501), entries: tracked(501)},
		{name: "master partially closed: reduce",
			masters: []broker.Position{mpos(501, "EURUSD", broker.Buy, 0.2, time.Hour)},
			pos:     netPos(7001, broker.Buy, 0.5, 501), entries: tracked(501),
			want: []Action{{Kind: PartialClose, Side: broker.Buy, Volume: 0.3, FollowerTicket: 7001}}},
		{name: "new master position adds",
			masters: []broker.Position{mpos(501, "EURUSD", broker.Buy, 0.5, time.Hour), mpos(502, "EURUSD", broker.Buy, 0.25, time.Second)},
			pos:     netPos(7001, broker.Buy, 0.5, 501), entries: tracked(501),
			want: []Action{{Kind: Open, Side: broker.Buy, Volume: 0.25, FollowerTicket: 7001}}},
		{name: "new opposite master position reduces",
			masters: []broker.Position{mpos(501, "EURUSD", broker.Buy, 0.5, time.Hour), mpos(502, "EURUSD", broker.Sell, 0.2, time.Second)},
			pos:     netPos(7001, broker.Buy, 0.5, 501), entries: tracked(501),
			want: []Action{{Kind: PartialClose, Side: broker.Buy, Volume: 0.2, FollowerTicket: 7001}}},
		{name: "net flips: close, then open the other side",
			masters: []broker.Position{mpos(501, "EURUSD", broker.Buy, 0.5, time.Hour), mpos(502, "EURUSD", broker.Sell, 0.8, time.Second)},
			pos:     netPos(7001, broker.Buy, 0.5, 501), entries: tracked(501),
			want: []Action{{Kind: Close, Side: broker.Buy, Volume: 0.5, FollowerTicket: 7001}, {Kind: Open, Side: broker.Sell, Volume: 0.3}}},
		{name: "masters closed: close",
			pos: netPos(7001, broker.Buy, 0.5, 501), entries: tracked(501),
			want: []Action{{Kind: Close, Side: broker.Buy, Volume: 0.5, FollowerTicket: 7001}}},
		{name: "an old uncopied master position is not copied late",
			masters: []broker.Position{mpos(501, "EURUSD", broker.Buy, 0.5, time.Hour), mpos(502, "EURUSD", broker.Sell, 0.5, time.Hour)},
			pos:     netPos(7001, broker.Buy, 0.5, 501), entries: tracked(501)},
		{name: "carried positions net to zero: close",
			masters: []broker.Position{mpos(501, "EURUSD", broker.Buy, 0.5, time.Hour), mpos(502, "EURUSD", broker.Sell, 0.5, time.Hour)},
			pos:     netPos(7001, broker.Buy, 0.5, 501), entries: tracked(501, 502),
			want: []Action{{Kind: Close, Side: broker.Buy, Volume: 0.5, FollowerTicket: 7001}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := testInput(broker.Netting)
			in.Master.Positions = tc.masters
			in.Follower.Positions = []broker.Position{tc.pos}
			in.TicketMap = tc.entries
			res := Plan(in)
			var got []Action
			for _, a := range res.Actions {
				got = append(got, Action{Kind: a.Kind, Side: a.Side, Volume: a.Volume, FollowerTicket: a.FollowerTicket})
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("actions %v\nwant %v\n(skips %v)", res.Actions, tc.want, res.Skipped)
			}
		})
	}
}

func TestNettingForeignPositionBlocksSymbol(t *testing.T) {
	in := testInput(broker.Netting)
	in.Master.Positions = []broker.Position{mpos(501, "EURUSD", broker.Buy, 0.5, time.Second)}
	in.Follower.Positions = []broker.Position{{Ticket: 8001, Symbol: "EURUSD", Side: broker.Sell, Volume: 1, Magic: 2002}}
	res := Plan(in)
	if len(res.Actions) != 0 || !reflect.DeepEqual(skipReasons(res), []SkipReason{SkipNettingSymbolBusy}) {
		t.Fatalf("actions %v, skips %v", res.Actions, res.Skipped)
	}
}

func TestNettingAdoptsByMarkerAndTracks(t *testing.T) {
	in := testInput(broker.Netting)
	in.Master.Positions = []broker.Position{mpos(501, "EURUSD", broker.Buy, 0.5, time.Hour)}
	in.Follower.Positions = []broker.Position{netPos(7001, broker.Buy, 0.5, 501)}
	res := Plan(in)
	want := []TicketMapEntry{{LinkID: 1, MasterTicket: 501, FollowerTicket: 7001, Volume: 1}}
	if len(res.Actions) != 0 || !reflect.DeepEqual(res.Track, want) {
		t.Fatalf("actions %v, track %v", res.Actions, res.Track)
	}
}

func TestNettingClosedByUserIsNotReopened(t *testing.T) {
	in := testInput(broker.Netting)
	in.Master.Positions = []broker.Position{mpos(501, "EURUSD", broker.Buy, 0.5, time.Second)}
	in.TicketMap = []TicketMapEntry{{LinkID: 1, MasterTicket: 501, FollowerTicket: 7001, Volume: 1}}
	res := Plan(in)
	if !res.Converged() || !reflect.DeepEqual(skipReasons(res), []SkipReason{SkipCopyClosed}) {
		t.Fatalf("actions %v, skips %v", res.Actions, res.Skipped)
	}
}

func TestNettingReverseAndStops(t *testing.T) {
	in := testInput(broker.Netting)
	in.Link.Settings.Reverse = true
	m := mpos(501, "EURUSD", broker.Buy, 0.5, time.Second)
	m.SL, m.TP = 1.09, 1.12
	in.Master.Positions = []broker.Position{m}
	res := Plan(in)
	if len(res.Actions) != 1 {
		t.Fatalf("actions %v", res.Actions)
	}
	if a := res.Actions[0]; a.Side != broker.Sell || a.SL != 1.12 || a.TP != 1.09 {
		t.Fatalf("reversed net open %v", a)
	}
}
