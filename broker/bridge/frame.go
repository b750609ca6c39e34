package bridge

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// ProtocolVersion is the bridge protocol version this package speaks. A peer that speaks
// another version is refused during the handshake.
const ProtocolVersion = 1

// MaxFrameSize is the largest frame payload, in bytes, that either side sends or accepts.
// A larger incoming frame is a protocol error that ends the connection; a response that
// would be larger is replied to with an error instead.
const MaxFrameSize = 16 << 20

// MaxHelloSize is the largest frame the Go server accepts before the handshake has
// authenticated the client (the hello frame is a few hundred bytes): a stranger cannot
// make the server hold more than this per connection.
const MaxHelloSize = 64 << 10

// MaxID is the largest id (request, session, subscription) a peer may use: 2^53 − 1, so
// that every JSON implementation reads it exactly.
const MaxID = 1<<53 - 1

// Frame types (the "type" member of every frame).
const (
	frameHello       = "hello"       // client → server, first frame
	frameWelcome     = "welcome"     // server → client, handshake accepted
	frameRefused     = "refused"     // server → client, handshake refused; the server then closes
	frameRequest     = "request"     // client → server
	frameResponse    = "response"    // server → client, exactly one per request
	frameCancel      = "cancel"      // client → server: the caller gave up on a request
	frameEvent       = "event"       // server → client: one feed event of a subscription
	frameSubEnd      = "sub_end"     // server → client: a subscription ended server-side
	frameUnsubscribe = "unsubscribe" // client → server: end a subscription
	framePing        = "ping"        // client → server
	framePong        = "pong"        // server → client
)

// outFrame is a frame to encode. Params, Result and Event hold typed wire values.
type outFrame struct {
	Type    string     `json:"type"`
	ID      uint64     `json:"id,omitempty"`
	Method  string     `json:"method,omitempty"`
	Session uint64     `json:"session,omitempty"`
	Sub     uint64     `json:"sub,omitempty"`
	Timeout int64      `json:"timeout_ms,omitempty"`
	Params  any        `json:"params,omitempty"`
	Result  any        `json:"result,omitempty"`
	Error   *wireError `json:"error,omitempty"`
	Event   any        `json:"event,omitempty"`
	Reason  string     `json:"reason,omitempty"`

	// Handshake members.
	Version     int    `json:"version,omitempty"`
	Token       string `json:"token,omitempty"`
	Name        string `json:"name,omitempty"`
	MaxInflight int    `json:"max_inflight,omitempty"`
	IdleTimeout int64  `json:"idle_timeout_ms,omitempty"`
}

// inFrame is a decoded frame; Params, Result and Event stay raw until the goroutine that
// owns the request or call decodes them, so the connection's reader does little work.
type inFrame struct {
	Type    string          `json:"type"`
	ID      uint64          `json:"id"`
	Method  string          `json:"method"`
	Session uint64          `json:"session"`
	Sub     uint64          `json:"sub"`
	Timeout int64           `json:"timeout_ms"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *wireError      `json:"error"`
	Event   json.RawMessage `json:"event"`
	Reason  string          `json:"reason"`

	Version     int    `json:"version"`
	Token       string `json:"token"`
	Name        string `json:"name"`
	MaxInflight int    `json:"max_inflight"`
	IdleTimeout int64  `json:"idle_timeout_ms"`
}

// errFrameTooLarge is returned by encodeFrame for a payload above MaxFrameSize.
var errFrameTooLarge = fmt.Errorf("bridge: frame exceeds %d bytes", MaxFrameSize)

// encodeFrame returns f as one complete frame: a 4-byte big-endian payload length, then
// the JSON payload.
func encodeFrame(f *outFrame) ([]byte, error) {
	if b, ok := encodeFrameFast(f); ok {
		return b, nil
	}
	return encodeFrameJSON(f)
}

// encodeFrameJSON is encodeFrame by encoding/json alone: what encodeFrameFast must write.
func encodeFrameJSON(f *outFrame) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(256)
	buf.Write([]byte{0, 0, 0, 0})
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(f); err != nil {
		return nil, fmt.Errorf("bridge: encode %s frame: %w", f.Type, err)
	}
	b := buf.Bytes()
	b = b[:len(b)-1] // Encode appends a newline
	n := len(b) - 4
	if n > MaxFrameSize {
		return nil, errFrameTooLarge
	}
	binary.BigEndian.PutUint32(b, uint32(n))
	return b, nil
}

// frameReader reads frames from a stream, reusing one payload buffer.
type frameReader struct {
	r   *bufio.Reader
	buf []byte
	// limit is the largest payload accepted now (MaxFrameSize unless lowered).
	limit int
	// budget, when set, is charged for a payload's memory beyond readChunk while the
	// frame is read; charged is what this reader holds of it.
	budget  *byteBudget
	charged int
}

// byteBudget is the memory all connections together may hold in frames being read
// beyond their first readChunk (ServerOptions.FrameBudget).
type byteBudget struct {
	mu   sync.Mutex
	left int
}

// take reserves n bytes; false when fewer are left.
func (b *byteBudget) take(n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.left {
		return false
	}
	b.left -= n
	return true
}

func (b *byteBudget) give(n int) {
	b.mu.Lock()
	b.left += n
	b.mu.Unlock()
}

// errBudget ends a connection whose frame would take the server past its frame budget.
var errBudget = errors.New("bridge: frame refused: the server's budget for frames being read is spent")

func newFrameReader(r io.Reader) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 32<<10), limit: MaxFrameSize}
}

// readChunk is the first allocation for a payload and the least it grows by: a frame
// takes memory as its bytes arrive, not as its header declares.
const readChunk = 64 << 10

// next reads and decodes one frame. Any error leaves the stream unusable.
func (fr *frameReader) next() (*inFrame, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(fr.r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n == 0 || n > MaxFrameSize {
		return nil, fmt.Errorf("bridge: bad frame length %d", n)
	}
	if int(n) > fr.limit {
		return nil, fmt.Errorf("bridge: frame of %d bytes exceeds the limit of %d bytes here", n, fr.limit)
	}
	p, err := fr.payload(int(n))
	defer fr.release()
	if err != nil {
		return nil, err
	}
	return decodeFrame(p)
}

// release drops a buffer that grew past readChunk and gives its charge back: a large
// buffer is not pinned after one big frame.
func (fr *frameReader) release() {
	if cap(fr.buf) > readChunk || fr.charged > 0 {
		fr.buf = nil
	}
	if fr.charged > 0 {
		fr.budget.give(fr.charged)
		fr.charged = 0
	}
}

// payload reads n bytes, growing the buffer only as fast as bytes arrive (a header that
// declares 16 MiB and sends nothing costs readChunk, not 16 MiB).
func (fr *frameReader) payload(n int) ([]byte, error) {
	buf := fr.buf[:0]
	for len(buf) < n {
		want := min(n-len(buf), max(len(buf), readChunk))
		if cap(buf)-len(buf) < want {
			if extra := len(buf) + want - readChunk - fr.charged; fr.budget != nil && extra > 0 {
				if !fr.budget.take(extra) {
					return nil, errBudget
				}
				fr.charged += extra
			}
			nb := make([]byte, len(buf), len(buf)+want)
			copy(nb, buf)
			buf = nb
		}
		m, err := io.ReadFull(fr.r, buf[len(buf):len(buf)+want])
		buf = buf[:len(buf)+m]
		if err != nil {
			fr.buf = nil
			return nil, err
		}
	}
	fr.buf = buf
	return buf, nil
}

// decodeFrame decodes one frame payload: a JSON object with a type, and ids in range.
func decodeFrame(p []byte) (*inFrame, error) {
	f, ok := decodeFrameFast(p)
	if !ok {
		f = new(inFrame)
		if err := json.Unmarshal(p, f); err != nil {
			return nil, fmt.Errorf("bridge: malformed frame: %w", err)
		}
	}
	if f.Type == "" {
		return nil, fmt.Errorf("bridge: frame without a type")
	}
	return f, nil
}

// badID names the first id of f above MaxID, or returns "".
func (f *inFrame) badID() string {
	switch {
	case f.ID > MaxID:
		return "id"
	case f.Session > MaxID:
		return "session"
	case f.Sub > MaxID:
		return "sub"
	}
	return ""
}
