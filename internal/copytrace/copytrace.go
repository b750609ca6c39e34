// Package copytrace records, for every order a node sends, when it passed each stage
// between the master's trade and the broker's reply, so that a load test can name the
// stage in which copies wait instead of guessing from the code. A node records nothing
// unless it is given a Recorder (copierd run --trace-copies FILE); the stress tool gives
// its nodes one and joins the records with the trade server's order log by request id.
//
// Times are Unix nanoseconds of the node's wall clock (0: the stage does not apply).
// Stages measured in two processes are comparable only on one host or with synchronised
// clocks; the stress tool runs everything on one host.
package copytrace

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/google/uuid"
)

// Path is how an order came about.
type Path string

// Paths.
const (
	PathEvent     Path = "event"     // planned from one in-order master event
	PathReconcile Path = "reconcile" // planned by a reconcile (fetched positions)
)

// Record is one order's stages.
type Record struct {
	RequestID uuid.UUID `json:"id"`
	Account   int64     `json:"account"`
	Path      Path      `json:"path"`
	Cause     string    `json:"cause,omitempty"` // reconcile path: why it reconciled
	Action    string    `json:"action"`          // open, close, partial_close, modify
	Attempts  int       `json:"attempts"`        // broker calls, retries included

	EventServer  int64 `json:"event_server,omitempty"`  // event path: the master's trade, server time
	Received     int64 `json:"received,omitempty"`      // event path: read from the feed
	Dequeued     int64 `json:"dequeued"`                // the account actor took the message up
	ReconAsked   int64 `json:"recon_asked,omitempty"`   // reconcile path: asked of the Reconciler
	ReconStarted int64 `json:"recon_started,omitempty"` // the Reconciler started fetching
	ReconDone    int64 `json:"recon_done,omitempty"`    // fetched and planned
	Send         int64 `json:"send"`                    // gate checked; the call starts
	Slot         int64 `json:"slot,omitempty"`          // the broker connection's request slot taken
	Written      int64 `json:"written,omitempty"`       // handed to the network
	Replied      int64 `json:"replied"`                 // the call returned
	Executed     bool  `json:"executed"`                // the call succeeded
}

// Recorder writes records to a file as they come, in chunks, from a goroutine of its own:
// Add takes a short lock and never waits for I/O, and the Recorder's memory is bounded
// however long the node runs. (Kept in memory until the node stopped, the records of a
// five-minute overload were most of each node's heap, and the collector scanned them.) A
// chunk that finds the writer too far behind is dropped and counted, never waited for.
type Recorder struct {
	mu      sync.Mutex
	chunk   []Record
	dropped int
	closed  bool

	chunks chan []Record // full chunks to the writer
	free   chan []Record // written chunks back, emptied
	done   chan written  // the writer's end
	w      *bufio.Writer
	file   *os.File // Create's, closed by Close
}

// Sizes of a Recorder's buffers: chunkSize records a chunk, queued full chunks at most
// (about 10 MB in all at 150 bytes a record).
const (
	chunkSize = 4096
	queued    = 16
)

// NewRecorder returns a Recorder that writes to w (see Create).
func NewRecorder(w io.Writer) *Recorder { return newRecorder(w, chunkSize, queued) }

func newRecorder(w io.Writer, size, queue int) *Recorder {
	rc := &Recorder{chunk: make([]Record, 0, size), chunks: make(chan []Record, queue), free: make(chan []Record, queue+1),
		done: make(chan written, 1), w: bufio.NewWriterSize(w, 1<<16)}
	go rc.write()
	return rc
}

// Create returns a Recorder that writes to a new file at path.
func Create(path string) (*Recorder, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("copy trace: %w", err)
	}
	rc := NewRecorder(f)
	rc.file = f
	return rc, nil
}

// Add records r, or counts it as dropped when the writer is too far behind (or after
// Close).
func (rc *Recorder) Add(r Record) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.closed {
		rc.dropped++
		return
	}
	rc.chunk = append(rc.chunk, r)
	if len(rc.chunk) < cap(rc.chunk) {
		return
	}
	select {
	case rc.chunks <- rc.chunk:
		select {
		case rc.chunk = <-rc.free:
		default:
			rc.chunk = make([]Record, 0, cap(rc.chunk))
		}
	default:
		rc.dropped += len(rc.chunk)
		clear(rc.chunk)
		rc.chunk = rc.chunk[:0]
	}
}

// written is the writer's account: records encoded, and its first error.
type written struct {
	records int
	err     error
}

// write encodes the chunks as JSON lines; after an error it only drains them.
func (rc *Recorder) write() {
	enc := json.NewEncoder(rc.w)
	var out written
	for c := range rc.chunks {
		for i := range c {
			if out.err == nil {
				if out.err = enc.Encode(&c[i]); out.err == nil {
					out.records++
				}
			}
		}
		clear(c)
		select {
		case rc.free <- c[:0]:
		default:
		}
	}
	rc.done <- out
}

// trailer is the last line of a trace file: it says the file is whole.
type trailer struct {
	End     bool `json:"end"`
	Records int  `json:"records"`
	Dropped int  `json:"dropped"`
}

// Close writes the records still held and the trailer (how many records and how many
// were dropped), then closes the file of Create. Records added later are dropped.
func (rc *Recorder) Close() error {
	rc.mu.Lock()
	if rc.closed {
		rc.mu.Unlock()
		return errors.New("copy trace: closed twice")
	}
	rc.closed = true
	if len(rc.chunk) > 0 {
		rc.chunks <- rc.chunk // the writer drains: this waits at most for queued chunks
	}
	rc.chunk = nil
	dropped := rc.dropped
	rc.mu.Unlock()
	close(rc.chunks)
	out := <-rc.done
	err := out.err
	if err == nil {
		err = json.NewEncoder(rc.w).Encode(trailer{End: true, Records: out.records, Dropped: dropped})
	}
	if err == nil {
		err = rc.w.Flush()
	}
	if rc.file != nil {
		if cerr := rc.file.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("copy trace: %w", err)
	}
	return nil
}

// line is one line of a trace file: a record, or the trailer.
type line struct {
	Record
	trailer
}

// Read reads a trace file: its records and how many the node dropped. A file without its
// trailer (the node did not stop: killed) or with fewer records than the trailer says is
// an error; the records read before it are returned with it.
func Read(r io.Reader) ([]Record, int, error) {
	dec := json.NewDecoder(bufio.NewReaderSize(r, 1<<16))
	var out []Record
	for {
		var l line
		if err := dec.Decode(&l); err == io.EOF {
			return out, 0, fmt.Errorf("copy trace: %d records and no trailer (the node did not stop, or the file was cut)", len(out))
		} else if err != nil {
			return out, 0, fmt.Errorf("copy trace: record %d: %w", len(out)+1, err)
		}
		if l.End {
			if l.Records != len(out) {
				return out, l.Dropped, fmt.Errorf("copy trace: %d records, the trailer says %d", len(out), l.Records)
			}
			return out, l.Dropped, nil
		}
		out = append(out, l.Record)
	}
}

// ReadFile reads the trace file at path (see Read).
func ReadFile(path string) ([]Record, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("copy trace: %w", err)
	}
	defer f.Close()
	return Read(f)
}
