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

// Recorder keeps records in memory, up to a bound, until they are written out. Safe for
// concurrent use; Add takes a short lock and never waits for I/O.
type Recorder struct {
	mu      sync.Mutex
	limit   int
	records []Record
	dropped int
}

// DefaultLimit bounds a Recorder made with limit 0 (about 250 MB of records).
const DefaultLimit = 2_000_000

// NewRecorder returns a Recorder that keeps at most limit records (0: DefaultLimit) and
// counts the rest as dropped.
func NewRecorder(limit int) *Recorder {
	if limit <= 0 {
		limit = DefaultLimit
	}
	return &Recorder{limit: limit}
}

// Add keeps r, or counts it as dropped when the Recorder is full.
func (rc *Recorder) Add(r Record) {
	rc.mu.Lock()
	if len(rc.records) < rc.limit {
		rc.records = append(rc.records, r)
	} else {
		rc.dropped++
	}
	rc.mu.Unlock()
}

// header is the first line of a trace file.
type header struct {
	Records int `json:"records"`
	Dropped int `json:"dropped"`
}

// Write writes every record kept so far as JSON lines, after a header line with the
// counts.
func (rc *Recorder) Write(w io.Writer) error {
	rc.mu.Lock()
	recs, dropped := rc.records, rc.dropped
	rc.mu.Unlock()
	bw := bufio.NewWriterSize(w, 1<<16)
	enc := json.NewEncoder(bw)
	if err := enc.Encode(header{Records: len(recs), Dropped: dropped}); err != nil {
		return err
	}
	for i := range recs {
		if err := enc.Encode(&recs[i]); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// WriteFile writes the records to path (see Write).
func (rc *Recorder) WriteFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("copy trace: %w", err)
	}
	if err := rc.Write(f); err != nil {
		f.Close()
		return fmt.Errorf("copy trace: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("copy trace: write %s: %w", path, err)
	}
	return nil
}

// Read reads a trace written by Write: its records and how many the node dropped.
func Read(r io.Reader) ([]Record, int, error) {
	dec := json.NewDecoder(bufio.NewReaderSize(r, 1<<16))
	var h header
	if err := dec.Decode(&h); err != nil {
		return nil, 0, fmt.Errorf("copy trace: header: %w", err)
	}
	out := make([]Record, 0, h.Records)
	for {
		var rec Record
		if err := dec.Decode(&rec); err == io.EOF {
			break
		} else if err != nil {
			return out, h.Dropped, fmt.Errorf("copy trace: record %d: %w", len(out)+1, err)
		}
		out = append(out, rec)
	}
	if len(out) != h.Records {
		return out, h.Dropped, fmt.Errorf("copy trace: %d records, the header says %d (truncated file?)", len(out), h.Records)
	}
	return out, h.Dropped, nil
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
