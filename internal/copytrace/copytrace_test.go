package copytrace

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
)

func rec(i int) Record {
	return Record{RequestID: uuid.New(), Account: int64(i), Path: PathEvent, Action: "open", Send: int64(i + 1)}
}

// TestRoundTripAcrossChunks: every record comes back in order, the trailer counts them.
func TestRoundTripAcrossChunks(t *testing.T) {
	var buf bytes.Buffer
	rc := newRecorder(&buf, 3, 4)
	for i := range 10 {
		rc.Add(rec(i))
	}
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}
	recs, dropped, err := Read(&buf)
	if err != nil || dropped != 0 || len(recs) != 10 {
		t.Fatalf("%d records, %d dropped, %v", len(recs), dropped, err)
	}
	for i, r := range recs {
		if r.Account != int64(i) || r.Send != int64(i+1) {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
	rc.Add(rec(11)) // after Close: dropped, not written
	if err := rc.Close(); err == nil {
		t.Fatal("a second Close said nothing")
	}
}

// gate is a writer that blocks until opened.
type gate struct {
	open chan struct{}
	w    bytes.Buffer
}

func (g *gate) Write(p []byte) (int, error) { <-g.open; return g.w.Write(p) }

// TestAWriterBehindDropsChunks: Add never waits for the writer; what it cannot queue is
// counted in the trailer, and what was queued is written.
func TestAWriterBehindDropsChunks(t *testing.T) {
	g := &gate{open: make(chan struct{})}
	// One record a chunk; the bufio buffer (64 KiB) holds the first few lines, so the
	// writer blocks only once the buffer fills: records are big enough to fill it fast.
	rc := newRecorder(g, 1, 2)
	const n = 2000
	big := strings.Repeat("x", 200)
	for i := range n {
		r := rec(i)
		r.Cause = big
		rc.Add(r)
	}
	close(g.open)
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}
	recs, dropped, err := Read(&g.w)
	if err != nil {
		t.Fatal(err)
	}
	if dropped == 0 || len(recs)+dropped != n {
		t.Fatalf("%d written + %d dropped, want some dropped and %d in all", len(recs), dropped, n)
	}
}

// TestACutFileIsAnError: a file without its trailer (the node was killed) gives the
// records before the cut with an error.
func TestACutFileIsAnError(t *testing.T) {
	var buf bytes.Buffer
	rc := NewRecorder(&buf)
	for i := range 5 {
		rc.Add(rec(i))
	}
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}
	whole := buf.Bytes()
	lines := bytes.SplitAfter(whole, []byte("\n"))
	noTrailer := bytes.Join(lines[:5], nil)
	recs, _, err := Read(bytes.NewReader(noTrailer))
	if err == nil || len(recs) != 5 {
		t.Fatalf("without the trailer: %d records, err %v", len(recs), err)
	}
	cut := whole[:len(lines[0])+len(lines[1])+10]
	recs, _, err = Read(bytes.NewReader(cut))
	if err == nil || len(recs) != 2 {
		t.Fatalf("cut mid-record: %d records, err %v", len(recs), err)
	}
}

type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestAWriteErrorReachesClose: a failing file is reported, not silently short.
func TestAWriteErrorReachesClose(t *testing.T) {
	rc := newRecorder(failing{}, 1, 4)
	for i := range 3 {
		rc.Add(rec(i))
	}
	if err := rc.Close(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Close: %v, want the write error", err)
	}
}

// TestConcurrentAdds: accounts add from many goroutines (race detector).
func TestConcurrentAdds(t *testing.T) {
	rc := newRecorder(io.Discard, 16, 64)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				rc.Add(rec(g*1000 + i))
			}
		}()
	}
	wg.Wait()
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}
}
