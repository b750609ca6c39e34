package bridge

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"testing"
)

// frameBytes is one frame on the wire.
func frameBytes(payload string) []byte {
	b := make([]byte, 4+len(payload))
	binary.BigEndian.PutUint32(b, uint32(len(payload)))
	copy(b[4:], payload)
	return b
}

// FuzzFrameReader feeds arbitrary bytes to the frame reader, as a stranger on the bridge
// port could: it must return frames or an error, never panic, and never return a frame
// without a type or above its limit.
func FuzzFrameReader(f *testing.F) {
	f.Add(frameBytes(`{"type":"hello","version":1,"token":"t","name":"n"}`), false)
	f.Add(append(frameBytes(`{"type":"ping","id":1}`), frameBytes(`{"type":"request","id":2,"method":"session.account","session":1}`)...), true)
	f.Add(frameBytes(`{"type":"request","id":9007199254740993}`), true)
	f.Add([]byte{0, 0xff, 0xff, 0xff, '{'}, false)
	f.Add([]byte{0, 0, 0, 0}, true)
	f.Add(frameBytes(`{"type":""}`), true)
	f.Add(frameBytes(`[]`), true)
	f.Add(frameBytes(`{"type":"x","params":{"a":[1,2,{"b":null}]},"id":-1}`), true)
	f.Fuzz(func(t *testing.T, data []byte, authenticated bool) {
		fr := newFrameReader(bytes.NewReader(data))
		if !authenticated {
			fr.limit = MaxHelloSize
		}
		for range 64 {
			fr0 := fr.limit
			f, err := fr.next()
			if err != nil {
				return
			}
			if f.Type == "" {
				t.Fatal("a frame without a type")
			}
			_ = f.badID()
			if fr.limit != fr0 {
				t.Fatal("the limit changed")
			}
		}
	})
}

// FuzzDecodeParams decodes arbitrary request params into every wire type the server
// reads: an error or a value, never a panic.
func FuzzDecodeParams(f *testing.F) {
	f.Add([]byte(`{"login":"l","server":"s","password":"p"}`))
	f.Add([]byte(`{"request_id":"6f1c2a9e-8a34-4d1e-9a59-0b1f7c3e2d10","token":3,"node":"n","symbol":"EURUSD","side":-1,"type":0,"volume":0.02,"magic":42,"comment":"hi"}`))
	f.Add([]byte(`{"request_id":"not-a-uuid","ticket":1e400,"volume":"x"}`))
	f.Add([]byte(`{"sub":18446744073709551616}`))
	f.Add([]byte(`{"login":"\u0000","server":"\ud800"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, params []byte) {
		fr := &inFrame{Type: frameRequest, ID: 1, Method: "x", Params: json.RawMessage(params)}
		for _, v := range []any{&wireCredentials{}, &wireOpen{}, &wireClose{}, &wireModify{}, &wireSubscribe{},
			&wireAccountSpec{}, &wireMasterOpen{}, &wireMasterModify{}, &wireMasterClose{}, &wireLogin{},
			&wireOrderLogQuery{}, &wireFaults{}, &wireServerOptions{}} {
			if err := decodeParams(fr, v); err == nil {
				// What was decoded goes back on the wire in answers and logs.
				if _, err := json.Marshal(v); err != nil && !isUnsupportedValue(err) {
					t.Fatalf("decoded %T does not encode: %v", v, err)
				}
			}
		}
	})
}

// isUnsupportedValue reports an encoding error for a value JSON cannot carry (never
// produced by decoding JSON, listed for clarity).
func isUnsupportedValue(err error) bool {
	var uv *json.UnsupportedValueError
	return errors.As(err, &uv)
}
