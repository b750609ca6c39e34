package actors

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/snapcopier/copier/broker"
)

// TestEncodeSnapshotIsJSONMarshal: the hand-written encoding of a positions snapshot is
// json.Marshal's, byte for byte, for ordinary positions and for every kind of value it
// hands to encoding/json (escaped characters, invalid UTF-8, floats written with an
// exponent, NaN, odd time zones, years out of range).
func TestEncodeSnapshotIsJSONMarshal(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	strs := []string{"", "EURUSD", "EURUSD.m", "mc12345", "copy 1/2", "a\"b", `back\slash`, "<tag>", "a&b", "tab\there",
		"naïve", "\xff\xfe", "line\u2028sep", "del\x7f", "日本"}
	floats := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1.23456, 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, -1e21, 123456789.123,
		math.MaxFloat64, math.SmallestNonzeroFloat64, math.Inf(1), math.Inf(-1), math.NaN()}
	zones := []*time.Location{time.UTC, time.FixedZone("plus", 3*3600), time.FixedZone("minus", -(5*3600 + 30*60)),
		time.FixedZone("secs", 3600+7), time.FixedZone("day", 24*3600), time.FixedZone("far", -25*3600)}
	times := []time.Time{{}, time.Date(2026, 12, 7, 6, 3, 0, 0, time.UTC), time.Date(2026, 12, 7, 6, 3, 0, 123456789, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 1, time.UTC)}
	pick := func() broker.Position {
		tm := times[rng.IntN(len(times))]
		if rng.IntN(2) == 0 {
			tm = time.Unix(rng.Int64N(4e9)-1e9, rng.Int64N(1e9)).In(zones[rng.IntN(len(zones))])
		}
		return broker.Position{Ticket: rng.Int64() - rng.Int64(), Symbol: strs[rng.IntN(len(strs))], Side: broker.Side(rng.IntN(4) - 1),
			Volume: floats[rng.IntN(len(floats))], OpenPrice: rng.Float64() * 2, SL: floats[rng.IntN(len(floats))], TP: rng.NormFloat64(),
			Magic: rng.Int64N(1 << 40), Comment: strs[rng.IntN(len(strs))], OpenTime: tm}
	}
	plain := 0
	for i := range 20000 {
		ps := make([]broker.Position, rng.IntN(4))
		for j := range ps {
			ps[j] = pick()
		}
		if i%3 == 0 { // mostly ordinary positions, so the hand-written path is the one compared
			for j := range ps {
				ps[j].Symbol, ps[j].Comment, ps[j].Volume, ps[j].SL = "EURUSD", "mc42", 0.37, 1.1
				ps[j].OpenTime = time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).In(zones[rng.IntN(3)])
			}
		}
		got, want := encodeSnapshot(ps), marshalSnapshot(ps)
		if !bytes.Equal(got, want) {
			t.Fatalf("positions %+v:\nencodeSnapshot %s\njson.Marshal   %s", ps, got, want)
		}
		if _, ok := appendAll(ps); ok && len(ps) > 0 {
			plain++
		}
	}
	if plain < 5000 {
		t.Fatalf("only %d of the snapshots went the hand-written way: the test compares too little", plain)
	}
}

// appendAll reports whether every position of ps goes the hand-written way.
func appendAll(ps []broker.Position) ([]byte, bool) {
	var b []byte
	for _, p := range ps {
		var ok bool
		if b, ok = appendSnapshotPosition(b, p); !ok {
			return b, false
		}
	}
	return b, true
}

// BenchmarkEncodeSnapshot: a follower's snapshot of five positions, by hand and by
// encoding/json.
func BenchmarkEncodeSnapshot(b *testing.B) {
	ps := make([]broker.Position, 5)
	for i := range ps {
		ps[i] = broker.Position{Ticket: 1000 + int64(i), Symbol: "EURUSD", Side: broker.Buy, Volume: 0.37, OpenPrice: 1.08765,
			SL: 1.0812, Magic: 9, Comment: "mc77", OpenTime: time.Date(2026, 12, 7, 6, 3, 0, 123456789, time.UTC)}
	}
	for _, c := range []struct {
		name string
		f    func([]broker.Position) []byte
	}{{"by-hand", encodeSnapshot}, {"encoding-json", marshalSnapshot}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.f(ps)
			}
		})
	}
}
