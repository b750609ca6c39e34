// Package pgparams encodes a statement's parameters in PostgreSQL's binary format, into
// buffers kept from one statement to the next.
//
// The fenced writes send thousands of rows per statement as arrays. Through pgx's typed
// encoding every element of an array is boxed into an interface (an allocation per
// int64, string and time above the smallest), and the buffers grow again from a few
// hundred bytes for every statement: at 1,000 followers a flush allocated 19 objects and
// 3.8 KB per follower. Here an array is appended element by element from the caller's
// rows, with no intermediate slices and no boxing.
package pgparams

import (
	"encoding/binary"
	"math"
	"time"
)

// Type OIDs of the parameters and elements this package encodes (pg_type.oid, fixed in
// PostgreSQL).
const (
	oidInt8Array        = 1016
	oidFloat8Array      = 1022
	oidTextArray        = 1009
	oidTimestamptzArray = 1185

	oidInt8        = 20
	oidFloat8      = 701
	oidText        = 25
	oidTimestamptz = 1184
)

// binaryFormat is the wire protocol's format code of binary parameters.
const binaryFormat = 1

// y2kUnixMicros is 2000-01-01 00:00:00 UTC, PostgreSQL's timestamp epoch, in microseconds
// after the Unix epoch.
const y2kUnixMicros = 946_684_800_000_000

// Params are one statement's parameters, binary encoded, in order. The zero value is
// ready; Reset readies it for the next statement and keeps its buffers.
type Params struct {
	buf     []byte
	spans   [][2]int // each parameter's bytes in buf; never NULL (no SQL NULL parameter is needed)
	oids    []uint32
	formats []int16
	values  [][]byte
}

// Reset forgets the parameters and keeps the buffers.
func (p *Params) Reset() {
	p.buf, p.spans, p.oids, p.formats, p.values = p.buf[:0], p.spans[:0], p.oids[:0], p.formats[:0], p.values[:0]
}

// Len is the number of parameters.
func (p *Params) Len() int { return len(p.spans) }

// OIDs are the parameters' types, in order: what the statement must expect.
func (p *Params) OIDs() []uint32 { return p.oids }

// Formats are the parameters' format codes (all binary).
func (p *Params) Formats() []int16 { return p.formats }

// Values are the parameters' bytes, as the wire protocol's Bind carries them. They point
// into p's buffer: valid until the next Reset or append.
func (p *Params) Values() [][]byte {
	p.values = p.values[:0]
	for _, s := range p.spans {
		p.values = append(p.values, p.buf[s[0]:s[1]])
	}
	return p.values
}

func (p *Params) add(oid uint32, start int) {
	p.spans = append(p.spans, [2]int{start, len(p.buf)})
	p.oids = append(p.oids, oid)
	p.formats = append(p.formats, binaryFormat)
}

// Text appends a text parameter.
func (p *Params) Text(s string) {
	start := len(p.buf)
	p.buf = append(p.buf, s...)
	p.add(oidText, start)
}

// Int8Array appends a bigint[] of n elements, element i being at(i).
func (p *Params) Int8Array(n int, at func(i int) int64) {
	start := p.arrayHeader(oidInt8, n)
	for i := range n {
		p.buf = binary.BigEndian.AppendUint32(p.buf, 8)
		p.buf = binary.BigEndian.AppendUint64(p.buf, uint64(at(i)))
	}
	p.add(oidInt8Array, start)
}

// Float8Array appends a float8[] of n elements, element i being at(i), NULL where at
// returns false.
func (p *Params) Float8Array(n int, at func(i int) (float64, bool)) {
	start := p.arrayHeader(oidFloat8, n)
	for i := range n {
		v, ok := at(i)
		if !ok {
			p.null(start)
			continue
		}
		p.buf = binary.BigEndian.AppendUint32(p.buf, 8)
		p.buf = binary.BigEndian.AppendUint64(p.buf, math.Float64bits(v))
	}
	p.add(oidFloat8Array, start)
}

// TextArray appends a text[] of n elements, element i being at(i).
func (p *Params) TextArray(n int, at func(i int) string) { textArray(p, n, at) }

// TextArrayBytes appends a text[] of n elements, element i being the text at(i) holds
// (read, not kept).
func (p *Params) TextArrayBytes(n int, at func(i int) []byte) { textArray(p, n, at) }

func textArray[S string | []byte](p *Params, n int, at func(i int) S) {
	start := p.arrayHeader(oidText, n)
	for i := range n {
		s := at(i)
		p.buf = binary.BigEndian.AppendUint32(p.buf, uint32(len(s)))
		p.buf = append(p.buf, s...)
	}
	p.add(oidTextArray, start)
}

// TimestamptzArray appends a timestamptz[] of n elements, element i being at(i) to the
// microsecond (truncated, as pgx does), NULL where at returns false.
func (p *Params) TimestamptzArray(n int, at func(i int) (time.Time, bool)) {
	start := p.arrayHeader(oidTimestamptz, n)
	for i := range n {
		t, ok := at(i)
		if !ok {
			p.null(start)
			continue
		}
		us := t.Unix()*1_000_000 + int64(t.Nanosecond())/1000 - y2kUnixMicros
		p.buf = binary.BigEndian.AppendUint32(p.buf, 8)
		p.buf = binary.BigEndian.AppendUint64(p.buf, uint64(us))
	}
	p.add(oidTimestamptzArray, start)
}

// arrayHeader appends a one-dimensional array's header (none of its elements NULL yet)
// and returns where the parameter starts. An empty array has no dimensions.
func (p *Params) arrayHeader(elem uint32, n int) int {
	start := len(p.buf)
	dims := uint32(1)
	if n == 0 {
		dims = 0
	}
	p.buf = binary.BigEndian.AppendUint32(p.buf, dims)
	p.buf = binary.BigEndian.AppendUint32(p.buf, 0) // has NULLs: set by null
	p.buf = binary.BigEndian.AppendUint32(p.buf, elem)
	if n > 0 {
		p.buf = binary.BigEndian.AppendUint32(p.buf, uint32(n))
		p.buf = binary.BigEndian.AppendUint32(p.buf, 1) // lower bound
	}
	return start
}

// null appends a NULL element to the array that starts at start.
func (p *Params) null(start int) {
	binary.BigEndian.PutUint32(p.buf[start+4:], 1)
	p.buf = binary.BigEndian.AppendUint32(p.buf, math.MaxUint32) // length −1
}
