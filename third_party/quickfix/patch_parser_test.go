package quickfix

// Tests of the patched parser bounds (PATCHES.md): one peer cannot grow the parser's
// buffer past the bound, a hostile head or tag number ends the connection, and the
// repeated empty BodyLength no longer panics.

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"testing"
	"time"
)

// frame builds a FIX 4.4 message around body ("|" for SOH) with a correct BodyLength and
// CheckSum.
func frame(body string) []byte {
	b := bytes.ReplaceAll([]byte(body), []byte("|"), []byte{1})
	out := append([]byte(fmt.Sprintf("8=FIX.4.4\x019=%d\x01", len(b))), b...)
	sum := 0
	for _, c := range out {
		sum += int(c)
	}
	return append(out, []byte(fmt.Sprintf("10=%03d\x01", sum%256))...)
}

// endless yields prefix, then filler bytes until limit bytes were read in all, then EOF;
// it counts what was read.
type endless struct {
	prefix []byte
	filler byte
	limit  int
	read   int
}

func (e *endless) Read(p []byte) (int, error) {
	if e.read >= e.limit {
		return 0, io.EOF
	}
	n := min(len(p), e.limit-e.read)
	for i := range n {
		if e.read+i < len(e.prefix) {
			p[i] = e.prefix[e.read+i]
		} else {
			p[i] = e.filler
		}
	}
	e.read += n
	return n, nil
}

const testMax = 64 << 10

// bufferBound is the most the parser may hold for a bound of testMax: the grown buffer is
// at most twice the unconsumed bytes, which never exceed the bound plus head and trailer.
const bufferBound = 2 * (testMax + maxHeadLen + 8)

func TestParserBoundsAFrameThatNeverEnds(t *testing.T) {
	for name, prefix := range map[string]string{
		"no BodyLength":         "8=FIX.4.4\x01",
		"BodyLength, no end":    "8=FIX.4.4\x019=100\x0135=0\x01",
		"no BeginString at all": "",
	} {
		t.Run(name, func(t *testing.T) {
			src := &endless{prefix: []byte(prefix), filler: 'A', limit: 64 * testMax}
			p := newParser(src, testMax)
			_, err := p.ReadMessage()
			if err == nil {
				t.Fatal("ReadMessage returned a message")
			}
			if got := cap(p.bigBuffer); got > bufferBound {
				t.Fatalf("parser buffer grew to %d bytes, bound %d (err %v)", got, bufferBound, err)
			}
			if prefix != "" && src.read >= src.limit {
				t.Fatalf("parser read the whole %d-byte stream instead of refusing the frame (err %v)", src.read, err)
			}
		})
	}
}

func TestParserRefusesHostileHeads(t *testing.T) {
	for name, in := range map[string]string{
		"BodyLength above the bound":  fmt.Sprintf("8=FIX.4.4\x019=%d\x0135=0\x01", testMax+1),
		"BodyLength past int":         "8=FIX.4.4\x019=99999999999999999999999\x0135=0\x01",
		"BodyLength not second":       "8=FIX.4.4\x0135=0\x019=5\x0110=000\x01",
		"BeginString too long":        "8=" + string(bytes.Repeat([]byte("F"), 2*maxHeadLen)) + "\x019=5\x01",
		"tag number past nine digits": string(frame("35=0|1234567890=x|")),
		"tag number not a number":     string(frame("35=0|1x=y|")),
	} {
		t.Run(name, func(t *testing.T) {
			src := &endless{prefix: []byte(in), filler: 'A', limit: 16 * testMax}
			p := newParser(src, testMax)
			if _, err := p.ReadMessage(); err == nil {
				t.Fatal("ReadMessage accepted the frame")
			}
			if src.read >= src.limit {
				t.Fatalf("parser read the whole stream (%d bytes) before refusing", src.read)
			}
		})
	}
}

func TestParserReadsValidFrames(t *testing.T) {
	one, two := frame("35=0|49=a|56=b|34=1|"), frame("35=A|49=a|56=b|34=2|98=0|108=30|")
	big := frame("35=0|58=" + string(bytes.Repeat([]byte("x"), testMax-20)) + "|")
	var stream []byte
	for _, f := range [][]byte{one, []byte("garbage"), two, big, one} {
		stream = append(stream, f...)
	}
	p := newParser(bytes.NewReader(stream), testMax)
	for i, want := range [][]byte{one, two, big, one} {
		got, err := p.ReadMessage()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("message %d: got %q", i, got.Bytes())
		}
	}
}

// A short message must be returned as it arrives, without waiting for more bytes (the
// head check reads no further than the BodyLength field).
func TestParserDoesNotWaitPastAShortMessage(t *testing.T) {
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	msg := frame("35=0|")
	go func() { _, _ = c1.Write(msg) }()
	_ = c2.SetReadDeadline(time.Now().Add(time.Minute))
	got, err := newParser(c2, testMax).ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), msg) {
		t.Fatalf("got %q", got.Bytes())
	}
}

// Fuzzing found it (broker/fix FuzzVenueMessage): v0.9.7 panicked in atoi.
func TestParseMessageRepeatedEmptyBodyLength(t *testing.T) {
	for _, body := range []string{"35=0|09=|", "35=0|9=|", "35=0|9=-|"} {
		raw := frame(body)
		if err := ParseMessage(NewMessage(), bytes.NewBuffer(raw)); err == nil {
			t.Fatalf("%q parsed", raw)
		}
	}
}

func TestAtoiRefusesOverflow(t *testing.T) {
	for _, in := range []string{"", "-", "9223372036854775808", "99999999999999999999"} {
		if n, err := atoi([]byte(in)); err == nil {
			t.Fatalf("atoi(%q) = %d", in, n)
		}
	}
	if n, err := atoi([]byte("9223372036854775807")); err != nil || n != 9223372036854775807 {
		t.Fatalf("atoi(max int) = %d, %v", n, err)
	}
}

// FuzzReadMessage frames arbitrary bytes with the wire reader and parses every frame: no
// panic, and the buffer stays within its bound. The seeds include the repeated empty
// BodyLength that crashed v0.9.7.
func FuzzReadMessage(f *testing.F) {
	f.Add(frame("35=0|09=|"))
	f.Add(frame("35=A|49=a|56=b|34=1|98=0|108=30|553=u|554=p|"))
	f.Add([]byte("8=FIX.4.4\x019=\x01"))
	f.Add(append(frame("35=0|"), frame("35=0|9=|")...))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := newParser(bytes.NewReader(data), 1024)
		for {
			raw, err := p.ReadMessage()
			if cap(p.bigBuffer) > max(defaultBufSize, 2*(1024+maxHeadLen+8)) {
				t.Fatalf("buffer %d bytes", cap(p.bigBuffer))
			}
			if err != nil {
				return
			}
			_ = ParseMessage(NewMessage(), raw)
		}
	})
}
