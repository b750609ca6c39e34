package bridge

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/snapcopier/copier/broker"
)

// sameAsUnmarshal fails t when decodeFrameFast takes p and decodes it otherwise than
// json.Unmarshal does (or takes a payload json.Unmarshal refuses); it reports whether the
// fast path took p.
func sameAsUnmarshal(t *testing.T, p []byte) bool {
	t.Helper()
	got, ok := decodeFrameFast(p)
	if !ok {
		return false
	}
	var want inFrame
	if err := json.Unmarshal(p, &want); err != nil {
		t.Fatalf("fast path took %q, json.Unmarshal refuses it: %v", p, err)
	}
	if !reflect.DeepEqual(*got, want) {
		t.Fatalf("%q:\nfast path %+v\nUnmarshal %+v", p, *got, want)
	}
	return true
}

// TestDecodeFrameFastIsUnmarshal compares the fast frame decoder with json.Unmarshal on
// frames as encodeFrame writes them (random members and values, escapes, unicode, nested
// params), on every one of them cut, with a byte changed, inserted or dropped, and on edge
// cases; the fast path must take the plain frames, and whatever it takes it must decode
// exactly as json.Unmarshal does.
func TestDecodeFrameFastIsUnmarshal(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 31))
	plain, tookPlain, took := 0, 0, 0
	for range 4000 {
		f, isPlain := randomOutFrame(rng)
		b, err := encodeFrame(f)
		if err != nil {
			t.Fatal(err)
		}
		p := b[4:]
		if sameAsUnmarshal(t, p) {
			took++
			if isPlain {
				tookPlain++
			}
		}
		if isPlain {
			plain++
		}
		for range 8 {
			took += btoi(sameAsUnmarshal(t, mutate(rng, p)))
		}
	}
	for _, p := range []string{
		`{}`, ` { "type" : "ping" } `, `{"type":"ping"}x`, `{"type":"ping",}`, `{"type":"ping" "id":1}`,
		`{"type":"a","type":"b"}`, `{"Type":"ping"}`, `{"TYPE":"ping","id":1}`, `{"type":null}`, `{"type":"p\u0069ng"}`,
		`{"type":"x","id":-1}`, `{"type":"x","id":18446744073709551615}`, `{"type":"x","id":18446744073709551616}`,
		`{"type":"x","id":1.0}`, `{"type":"x","id":1e3}`, `{"type":"x","id":01}`, `{"type":"x","id":"1"}`,
		`{"type":"x","timeout_ms":-0}`, `{"type":"x","timeout_ms":-9223372036854775809}`, `{"type":"x","version":-5}`,
		`{"type":"x","params":null}`, `{"type":"x","params":{}}`, `{"type":"x","params":[]}`, `{"type":"x","params":"\ud800"}`,
		`{"type":"x","params":{"a":[1,-0.5e+7,true,false,null,"\"\\\/\b\f\n\r\t\u00e9"]}}`, `{"type":"x","params":01}`,
		`{"type":"x","params":1.}`, `{"type":"x","params":-}`, `{"type":"x","params":"\x"}`, `{"type":"x","params":"a` + "\x01" + `"}`,
		`{"type":"x","result":{"a":1,}}`, `{"type":"x","result":[1 2]}`, `{"type":"x","event":tru}`, `{"type":"x","unknown":1}`,
		`{"type":"x","error":{"class":"permanent","code":1,"message":"m"}}`, `{"type":"x","error":null}`,
		`{"type":"` + "\xff" + `"}`, `{"type":"é"}`, `[]`, `null`, `"x"`, ``, `{`, `{"type"`, `{"type":`, `{"type":"x"`,
		`{"type":"x","params":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`,
	} {
		took += btoi(sameAsUnmarshal(t, []byte(p)))
	}
	if tookPlain != plain {
		t.Fatalf("the fast path took %d of %d plain frames: it proves little", tookPlain, plain)
	}
	t.Logf("%d plain frames; the fast path took %d payloads in all", plain, took)
}

// FuzzDecodeFrameFast: on any payload the fast frame decoder either declines or decodes
// exactly as json.Unmarshal does.
func FuzzDecodeFrameFast(f *testing.F) {
	f.Add([]byte(`{"type":"response","id":7,"result":{"ticket":12,"price":1.0851,"volume":0.01}}`))
	f.Add([]byte(`{"type":"request","id":9,"method":"session.open","session":3,"timeout_ms":4000,"params":{"a":[1,{"b":"\u00e9"}]}}`))
	f.Add([]byte(`{"type":"event","sub":2,"event":{"kind":"opened"}}`))
	f.Add([]byte(`{"type":"hello","version":1,"token":"t","name":"n","max_inflight":64,"idle_timeout_ms":-1}`))
	f.Fuzz(func(t *testing.T, p []byte) { sameAsUnmarshal(t, p) })
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// randomOutFrame is a frame with random members; plain reports whether it is of the form
// the fast path takes (no error member, strings without escapes, valid UTF-8).
func randomOutFrame(rng *rand.Rand) (f *outFrame, plain bool) {
	plain = true
	str := func() string {
		switch rng.IntN(9) {
		case 0:
			plain = false
			return `quote " backslash \ newline` + "\n"
		case 1:
			plain = false
			return "<html> & " + string(rune(0x2028))
		case 2:
			return "é ünïcödé €"
		case 3:
			plain = false
			return "bad \xff utf-8"
		case 4:
			return ""
		case 5:
			plain = false
			return `say "hi" at c:\dir`
		}
		return fmt.Sprintf("s%d", rng.IntN(1000))
	}
	f = &outFrame{Type: []string{frameRequest, frameResponse, frameEvent, frameHello, framePing}[rng.IntN(5)]}
	if f.Type == "" {
		plain = false
	}
	if rng.IntN(2) == 0 {
		f.ID = rng.Uint64N(MaxID + 1)
	}
	if rng.IntN(2) == 0 {
		f.Method = str()
	}
	if rng.IntN(3) == 0 {
		f.Session, f.Sub = rng.Uint64(), rng.Uint64N(100)
	}
	if rng.IntN(3) == 0 {
		f.Timeout, f.IdleTimeout = rng.Int64()-rng.Int64(), -rng.Int64N(1000)
	}
	if rng.IntN(4) == 0 {
		f.Version, f.MaxInflight, f.Token, f.Name = rng.IntN(5)-2, rng.IntN(1<<20), str(), str()
	}
	if rng.IntN(5) == 0 {
		f.Reason = str()
	}
	if rng.IntN(10) == 0 {
		f.Error, plain = &wireError{Class: classPermanent, Code: rng.IntN(100), Message: str()}, false
	}
	switch rng.IntN(4) {
	case 0:
		f.Params = randomJSON(rng, 0)
	case 1:
		f.Result = randomJSON(rng, 0)
	case 2:
		f.Event = randomJSON(rng, 0)
	}
	return f, plain
}

// randomJSON is a random JSON-encodable value (a nil one is omitted from the frame).
func randomJSON(rng *rand.Rand, depth int) any {
	switch n := rng.IntN(9); {
	case n == 0 && depth < 4:
		m := map[string]any{}
		for i := range rng.IntN(4) {
			m[fmt.Sprintf("k%d\"\\é", i)] = randomJSON(rng, depth+1)
		}
		return m
	case n == 1 && depth < 4:
		a := make([]any, rng.IntN(4))
		for i := range a {
			a[i] = randomJSON(rng, depth+1)
		}
		return a
	case n == 2:
		return rng.NormFloat64() * 1e6
	case n == 3:
		return rng.Int64() - rng.Int64()
	case n == 4:
		return "s \" \\ / \b \f \n \r \t \x01 é \xff " + string(rune(0x2028))
	case n == 5:
		return rng.IntN(2) == 0
	case n == 6:
		return 1e300 * float64(rng.IntN(3)-1)
	}
	return map[string]any{"ticket": rng.Int64N(1 << 40), "price": 1.08512, "volume": 0.01, "symbol": "EURUSD"}
}

// mutate returns p cut short, or with one byte changed, inserted or dropped.
func mutate(rng *rand.Rand, p []byte) []byte {
	q := append([]byte(nil), p...)
	if len(q) == 0 {
		return q
	}
	i := rng.IntN(len(q))
	chars := []byte(`{}[]:,"\ -+.eE0123456789tfnul` + "\x00\xff\n")
	switch rng.IntN(4) {
	case 0:
		return q[:i]
	case 1:
		q[i] = chars[rng.IntN(len(chars))]
	case 2:
		q = append(q[:i], append([]byte{chars[rng.IntN(len(chars))]}, q[i:]...)...)
	default:
		q = append(q[:i], q[i+1:]...)
	}
	return q
}

// TestEncodeFrameFastIsEncoder compares the fast frame encoder with encoding/json on
// random frames: whatever it writes must be encodeFrameJSON's bytes, and it must write
// every frame without an error member or an unusual string.
func TestEncodeFrameFastIsEncoder(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 5))
	plain, took := 0, 0
	check := func(f *outFrame, isPlain bool) {
		t.Helper()
		want, err := encodeFrameJSON(f)
		got, ok := encodeFrameFast(f)
		if isPlain {
			plain++
			if !ok {
				t.Fatalf("the fast path declined a plain frame %+v", f)
			}
		}
		if !ok {
			return
		}
		took++
		if err != nil {
			t.Fatalf("fast path wrote %q, encoding/json refuses the frame: %v", got, err)
		}
		if string(got) != string(want) {
			t.Fatalf("fast path:\n%q\nencoding/json:\n%q", got, want)
		}
	}
	for range 4000 {
		f, isPlain := randomOutFrame(rng)
		check(f, isPlain && f.Error == nil && allPlainASCII(f))
	}
	var nilParams *wireError
	check(&outFrame{Type: framePing}, true)
	check(&outFrame{}, true)
	check(&outFrame{Type: frameRequest, ID: MaxID, Params: nilParams}, true)
	check(&outFrame{Type: frameRequest, Params: func() {}}, false)
	check(&outFrame{Type: frameResponse, Result: map[string]any{"html": "<a & b>"}}, true)
	check(&outFrame{Type: frameResponse, Timeout: -1 << 63, Version: -1, MaxInflight: 1 << 40}, true)
	if took == 0 || plain == 0 {
		t.Fatal("nothing compared")
	}
	t.Logf("%d plain frames; the fast path wrote %d", plain, took)
}

func allPlainASCII(f *outFrame) bool {
	for _, s := range []string{f.Type, f.Method, f.Reason, f.Token, f.Name} {
		if !plainString(s) {
			return false
		}
	}
	return true
}

// BenchmarkFrameCodec: one order's frames (the open request a node sends, the result the
// server answers) encoded and decoded by the fast paths and by encoding/json alone, and
// the params and the result inside them decoded.
func BenchmarkFrameCodec(b *testing.B) {
	open := toWireOpen(broker.OpenRequest{Order: broker.Order{RequestID: uuid.New(), Token: 42, Node: "node-1", Deadline: time.Now()},
		Symbol: "EURUSD", Side: broker.Buy, Volume: 0.01, Magic: 77, Comment: "cp:4711"})
	frames := []*outFrame{
		{Type: frameRequest, ID: 123456, Method: methodOpen, Session: 17, Timeout: 5000, Params: open}, // a value, as the client sends it
		{Type: frameResponse, ID: 123456, Result: toWireOrderResult(broker.OrderResult{Ticket: 100000123, Price: 1.08512, Volume: 0.01, ServerTime: time.Now()})},
	}
	for _, f := range frames {
		p, err := encodeFrameJSON(f)
		if err != nil {
			b.Fatal(err)
		}
		payload := p[4:]
		b.Run(f.Type+"/encode/fast", func(b *testing.B) {
			for b.Loop() {
				if _, ok := encodeFrameFast(f); !ok {
					b.Fatal("declined")
				}
			}
		})
		b.Run(f.Type+"/encode/json", func(b *testing.B) {
			for b.Loop() {
				if _, err := encodeFrameJSON(f); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(f.Type+"/decode/fast", func(b *testing.B) {
			for b.Loop() {
				if _, ok := decodeFrameFast(payload); !ok {
					b.Fatal("declined")
				}
			}
		})
		if w, ok := f.Params.(wireOpen); ok {
			raw := encodeJSON(b, w)
			b.Run("params/decode/fast", func(b *testing.B) {
				for b.Loop() {
					var r wireOpen
					if !decodeOrderParamsFast(raw, &r) {
						b.Fatal("declined")
					}
				}
			})
			b.Run("params/decode/json", func(b *testing.B) {
				for b.Loop() {
					var r wireOpen
					if err := json.Unmarshal(raw, &r); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		if w, ok := f.Result.(wireOrderResult); ok {
			raw, err := json.Marshal(w)
			if err != nil {
				b.Fatal(err)
			}
			b.Run("result/decode/fast", func(b *testing.B) {
				for b.Loop() {
					var r wireOrderResult
					if !decodeOrderResultFast(raw, &r) {
						b.Fatal("declined")
					}
				}
			})
			b.Run("result/decode/json", func(b *testing.B) {
				for b.Loop() {
					var r wireOrderResult
					if err := json.Unmarshal(raw, &r); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		b.Run(f.Type+"/decode/json", func(b *testing.B) {
			for b.Loop() {
				var in inFrame
				if err := json.Unmarshal(payload, &in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestDecodeOrderResultFastIsUnmarshal compares the fast order-result decoder with
// json.Unmarshal on results as the server writes them (random tickets, prices, volumes
// and times in several zones), on each of them mutated, and on edge cases, starting from
// a zero and from a filled value.
func TestDecodeOrderResultFastIsUnmarshal(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	// Starts made afresh for each decode: json.Unmarshal writes into a funds object the
	// value already points at.
	starts := []func() wireOrderResult{
		func() wireOrderResult { return wireOrderResult{} },
		func() wireOrderResult {
			return wireOrderResult{Ticket: 9, Price: 9, Volume: 9, ServerTime: time.Unix(9, 0)}
		},
		func() wireOrderResult {
			return wireOrderResult{Ticket: 9, ServerTime: time.Unix(9, 0), Funds: &wireFunds{Balance: 9, Equity: 9}}
		},
	}
	took, plain := 0, 0
	check := func(p []byte) bool {
		t.Helper()
		taken := false
		for _, fresh := range starts {
			start, got, want := fresh(), fresh(), fresh()
			if !decodeOrderResultFast(p, &got) {
				if !reflect.DeepEqual(got, start) {
					t.Fatalf("%q: a declined payload changed the value", p)
				}
				continue
			}
			taken = true
			if err := json.Unmarshal(p, &want); err != nil {
				t.Fatalf("fast path took %q, json.Unmarshal refuses it: %v", p, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%q:\nfast path %+v\nUnmarshal %+v", p, got, want)
			}
		}
		return taken
	}
	zones := []*time.Location{time.UTC, time.FixedZone("", 3*3600), time.FixedZone("x", -5*3600-1800)}
	for range 3000 {
		r := wireOrderResult{Ticket: rng.Int64() - rng.Int64(), Price: rng.Float64() * 100, Volume: float64(rng.IntN(1000)) / 100,
			ServerTime: time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).In(zones[rng.IntN(len(zones))])}
		if rng.IntN(5) == 0 {
			r.Price = rng.NormFloat64() * 1e-9
		}
		if rng.IntN(2) == 0 {
			r.Funds = &wireFunds{Balance: math.Round(rng.Float64()*1e8) / 100, Equity: math.Round(rng.NormFloat64()*1e8) / 100}
		}
		p, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		plain++
		if !check(p) {
			t.Fatalf("the fast path declined %s", p)
		}
		took++
		for range 8 {
			took += btoi(check(mutate(rng, p)))
		}
	}
	for _, p := range []string{`{}`, `{"ticket":1}`, `{"ticket":1,"ticket":2}`, `{"Ticket":1}`, `{"ticket":1.5}`, `{"ticket":"1"}`,
		`{"price":1e400}`, `{"price":-0}`, `{"price":1E-3}`, `{"price":.5}`, `{"price":null}`, `{"server_time":null}`,
		`{"server_time":"2026-12-07T14:00:00Z"}`, `{"server_time":"2026-12-07T14:00:00.123456789+03:00"}`,
		`{"server_time":"2026-12-07 14:00:00Z"}`, `{"server_time":"2026-12-07T14:00:00\u005a"}`, `{"server_time":""}`,
		`{"volume":0.01,"x":1}`, `{"volume":0.01} `, `{"volume":0.01}}`, `[]`, ``,
		`{"funds":{"balance":1,"equity":2}}`, `{"funds":{"balance":1}}`, `{"funds":{}}`, `{"funds":null}`, `{"funds":{"balance":1,"balance":2}}`,
		`{"funds":{"balance":1,"x":2}}`, `{"funds":{"equity":-5.25},"ticket":3}`, `{"funds":{"balance":1,"equity":2},"funds":{}}`,
		`{"funds":{"balance":1,"equity":2}`, `{"funds":[1,2]}`, `{"funds":{"balance":"1"}}`} {
		took += btoi(check([]byte(p)))
	}
	t.Logf("%d results as the server writes them; the fast path took %d payloads in all", plain, took)
}

// FuzzDecodeOrderResultFast: on any payload the fast order-result decoder either declines
// (leaving the value as it was) or decodes exactly as json.Unmarshal does.
func FuzzDecodeOrderResultFast(f *testing.F) {
	f.Add([]byte(`{"ticket":100000123,"price":1.08512,"volume":0.01,"server_time":"2026-12-07T14:00:00.123456789Z"}`))
	f.Add([]byte(`{"ticket":-1,"price":-0.5e-7,"server_time":"2026-12-07T14:00:00+03:00"}`))
	f.Add([]byte(`{"ticket":7,"price":1.1,"volume":0.1,"server_time":"2026-12-07T14:00:00Z","funds":{"balance":10000,"equity":9876.5}}`))
	f.Fuzz(func(t *testing.T, p []byte) {
		start := wireOrderResult{Ticket: 9, Price: 9, Volume: 9}
		got, want := start, start
		if !decodeOrderResultFast(p, &got) {
			if !reflect.DeepEqual(got, start) {
				t.Fatalf("%q: a declined payload changed the value", p)
			}
			return
		}
		if err := json.Unmarshal(p, &want); err != nil {
			t.Fatalf("fast path took %q, json.Unmarshal refuses it: %v", p, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\nfast path %+v\nUnmarshal %+v", p, got, want)
		}
	})
}
