package bridge

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
)

// encodeJSON is v as encodeFrameJSON's encoder writes it (no HTML escaping).
func encodeJSON(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// randomOrderValue is a random order request or result; plain reports whether every
// value in it is of the plain form the fast paths write.
func randomOrderValue(rng *rand.Rand) (v any, plain bool) {
	plain = true
	str := func() string {
		switch rng.IntN(6) {
		case 0:
			plain = false
			return `a "quoted" \ é` + "\n"
		case 1:
			return "<b>&</b>" // not escaped without HTML escaping
		case 2:
			return ""
		}
		return "node-" + string(rune('a'+rng.IntN(26)))
	}
	float := func() float64 {
		switch rng.IntN(8) {
		case 0:
			plain = false
			return 1e-9 * rng.Float64()
		case 1:
			plain = false
			return 1e22
		case 2:
			return 0
		}
		return math.Round(rng.Float64()*1e6) / 1e5
	}
	zones := []*time.Location{time.UTC, time.FixedZone("", 2*3600), time.FixedZone("", -9*3600-1800)}
	o := wireOrder{RequestID: uuid.UUID(rngBytes(rng)), Token: rng.Int64() - rng.Int64(), Node: str()}
	if rng.IntN(3) > 0 {
		o.Deadline = time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).In(zones[rng.IntN(len(zones))])
		if rng.IntN(20) == 0 {
			o.Deadline, plain = time.Date(10001, 1, 1, 0, 0, 0, 0, time.UTC), false
		}
	}
	switch rng.IntN(4) {
	case 0:
		return wireOpen{wireOrder: o, Symbol: str(), Side: int8(rng.IntN(256) - 128), Type: int8(rng.IntN(3)), Volume: float(),
			Price: float(), SL: float(), TP: float(), Magic: rng.Int64(), Comment: str(), WorstPrice: float()}, plain
	case 1:
		return wireClose{wireOrder: o, Ticket: rng.Int64(), Volume: float()}, plain
	case 2:
		return wireModify{wireOrder: o, Ticket: rng.Int64(), SL: float(), TP: float()}, plain
	}
	r := wireOrderResult{Ticket: rng.Int64(), Price: float(), Volume: float(), ServerTime: o.Deadline}
	if rng.IntN(2) == 0 {
		r.Funds = &wireFunds{Balance: float(), Equity: -float()}
	}
	return r, plain
}

func rngBytes(rng *rand.Rand) (b [16]byte) {
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// decodeInto decodes p into a new value of v's type by the fast path (ok false when it
// declines) and by json.Unmarshal, each starting from start (a value of that type).
func decodeInto(p []byte, start any) (fast any, ok bool, slow any, err error) {
	ft, st := reflect.New(reflect.TypeOf(start)), reflect.New(reflect.TypeOf(start))
	ft.Elem().Set(reflect.ValueOf(start))
	st.Elem().Set(reflect.ValueOf(start))
	if w, isResult := ft.Interface().(*wireOrderResult); isResult {
		ok = decodeOrderResultFast(p, w)
	} else {
		ok = decodeOrderParamsFast(p, ft.Interface())
	}
	err = json.Unmarshal(p, st.Interface())
	return ft.Elem().Interface(), ok, st.Elem().Interface(), err
}

// TestOrderParamsFastAreEncodingJSON: the order requests and results the fast paths write
// are encoding/json's bytes, and what they read (from a zero and from a filled value, as
// written, mutated, and edge cases) is what json.Unmarshal reads; they take every plain
// value.
func TestOrderParamsFastAreEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 4))
	plainCount, decoded := 0, 0
	check := func(p []byte, zero any) {
		t.Helper()
		filled, _ := randomOrderValue(rng)
		for _, start := range []any{zero, filled} {
			if reflect.TypeOf(start) != reflect.TypeOf(zero) {
				continue
			}
			fast, ok, slow, err := decodeInto(p, start)
			if !ok {
				if !reflect.DeepEqual(fast, start) {
					t.Fatalf("%s: a declined payload changed the value", p)
				}
				continue
			}
			decoded++
			if err != nil {
				t.Fatalf("fast path took %s, json.Unmarshal refuses it: %v", p, err)
			}
			if !reflect.DeepEqual(fast, slow) {
				t.Fatalf("%s:\nfast path %+v\nUnmarshal %+v", p, fast, slow)
			}
		}
	}
	for range 5000 {
		v, plain := randomOrderValue(rng)
		want := encodeJSON(t, v)
		got, ok := appendOrderValue([]byte("x"), v)
		if plain && !ok {
			t.Fatalf("the fast path declined a plain %T %+v", v, v)
		}
		if ok && string(got[1:]) != string(want) {
			t.Fatalf("fast path:\n%s\nencoding/json:\n%s", got[1:], want)
		}
		if want == nil {
			continue
		}
		zero := reflect.Zero(reflect.TypeOf(v)).Interface()
		before := decoded
		check(want, zero)
		if plain && decoded == before {
			t.Fatalf("the fast path declined to read %s", want)
		}
		if plain {
			plainCount++
		}
		for range 6 {
			check(mutate(rng, want), zero)
		}
	}
	for _, p := range []string{`{}`, `{"ticket":1,"ticket":2}`, `{"request_id":"6f1c2a9e8a344d1e9a590b1f7c3e2d10"}`,
		`{"request_id":"urn:uuid:6f1c2a9e-8a34-4d1e-9a59-0b1f7c3e2d10"}`, `{"request_id":"{6f1c2a9e-8a34-4d1e-9a59-0b1f7c3e2d10}"}`,
		`{"request_id":"not-a-uuid"}`, `{"request_id":null}`, `{"side":127}`, `{"side":128}`, `{"side":-129}`, `{"type":1.0}`,
		`{"volume":1e400}`, `{"deadline":"2026-12-07T14:00:00.5+01:00"}`, `{"deadline":""}`, `{"symbol":"EURUSD","x":1}`,
		`{"node":"a\"b"}`, `{"comment":"é"}`, `{"comment":"` + "\xff" + `"}`} {
		for _, zero := range []any{wireOpen{}, wireClose{}, wireModify{}, wireOrderResult{}} {
			check([]byte(p), zero)
		}
	}
	if _, ok := appendOrderValue(nil, map[string]int{}); ok {
		t.Fatal("wrote a value of another type")
	}
	t.Logf("%d plain values; %d decodes by the fast path", plainCount, decoded)
}

// FuzzDecodeOrderParamsFast: on any payload, for each order type, the fast path declines
// (leaving the value as it was) or reads exactly what json.Unmarshal reads.
func FuzzDecodeOrderParamsFast(f *testing.F) {
	f.Add([]byte(`{"request_id":"6f1c2a9e-8a34-4d1e-9a59-0b1f7c3e2d10","token":3,"node":"n","deadline":"2026-12-07T14:00:00.123Z","symbol":"EURUSD","side":-1,"type":0,"volume":0.02,"price":0,"sl":1.07,"tp":1.09,"magic":42,"comment":"hi"}`))
	f.Add([]byte(`{"request_id":"6f1c2a9e-8a34-4d1e-9a59-0b1f7c3e2d10","token":3,"node":"n","ticket":12,"volume":0}`))
	f.Fuzz(func(t *testing.T, p []byte) {
		for _, start := range []any{wireOpen{Symbol: "s", Volume: 1}, wireClose{Ticket: 1}, wireModify{SL: 1}} {
			fast, ok, slow, err := decodeInto(p, start)
			if !ok {
				if !reflect.DeepEqual(fast, start) {
					t.Fatalf("%q: a declined payload changed the value", p)
				}
				continue
			}
			if err != nil {
				t.Fatalf("fast path took %q, json.Unmarshal refuses it: %v", p, err)
			}
			if !reflect.DeepEqual(fast, slow) {
				t.Fatalf("%q:\nfast path %+v\nUnmarshal %+v", p, fast, slow)
			}
		}
	})
}
