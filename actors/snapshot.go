package actors

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/internal/jsonplain"
	"github.com/snapcopier/copier/store"
)

// SnapshotPosition is one position of a follower's positions snapshot: what its owner last
// saw, as stored in account_positions (a JSON array of these).
type SnapshotPosition struct {
	Ticket    int64     `json:"ticket"`
	Symbol    string    `json:"symbol"`
	Side      string    `json:"side"`
	Volume    float64   `json:"volume"`
	OpenPrice float64   `json:"open_price"`
	SL        float64   `json:"sl"`
	TP        float64   `json:"tp"`
	Magic     int64     `json:"magic"`
	Comment   string    `json:"comment"`
	OpenTime  time.Time `json:"open_time"`
}

// NewSnapshotPosition is p as a snapshot (and the console) shows it.
func NewSnapshotPosition(p broker.Position) SnapshotPosition {
	return SnapshotPosition{Ticket: p.Ticket, Symbol: p.Symbol, Side: p.Side.String(), Volume: p.Volume, OpenPrice: p.OpenPrice,
		SL: p.SL, TP: p.TP, Magic: p.Magic, Comment: p.Comment, OpenTime: p.OpenTime}
}

// DecodeSnapshot decodes a stored positions snapshot.
func DecodeSnapshot(doc []byte) ([]SnapshotPosition, error) {
	var out []SnapshotPosition
	err := json.Unmarshal(doc, &out)
	return out, err
}

// encodeSnapshot is json.Marshal of ps as SnapshotPositions, byte for byte
// (TestEncodeSnapshotIsJSONMarshal), written by hand: the StatusWriter encodes every
// changed account's positions at each flush, and json.Marshal's reflection was 3 % of a
// node's CPU at 20,000 followers. A value it does not write the plain way (a string with
// characters JSON escapes, a float past the plain range, a time outside years 0-9999)
// sends the whole snapshot through json.Marshal.
func encodeSnapshot(ps []broker.Position) []byte {
	b := make([]byte, 0, 2+256*len(ps))
	b = append(b, '[')
	for i, p := range ps {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = appendSnapshotPosition(b, p); !ok {
			return marshalSnapshot(ps)
		}
	}
	return append(b, ']')
}

// marshalSnapshot is encodeSnapshot by encoding/json.
func marshalSnapshot(ps []broker.Position) []byte {
	out := make([]SnapshotPosition, len(ps))
	for i, p := range ps {
		out[i] = NewSnapshotPosition(p)
	}
	doc, err := json.Marshal(out)
	if err != nil {
		return []byte("[]") // a NaN or infinite price, a time json cannot write
	}
	return doc
}

// appendSnapshotPosition appends p's JSON object; false when a value needs encoding/json.
func appendSnapshotPosition(b []byte, p broker.Position) ([]byte, bool) {
	if !jsonplain.String(p.Symbol, true) || !jsonplain.String(p.Comment, true) {
		return b, false
	}
	b = append(b, `{"ticket":`...)
	b = strconv.AppendInt(b, p.Ticket, 10)
	b = append(b, `,"symbol":"`...)
	b = append(b, p.Symbol...)
	b = append(b, `","side":"`...)
	side := p.Side.String()
	if !jsonplain.String(side, true) {
		return b, false
	}
	b = append(b, side...)
	b = append(b, `","volume":`...)
	b, ok := jsonplain.AppendFloat(b, p.Volume)
	b = append(b, `,"open_price":`...)
	b, ok2 := jsonplain.AppendFloat(b, p.OpenPrice)
	b = append(b, `,"sl":`...)
	b, ok3 := jsonplain.AppendFloat(b, p.SL)
	b = append(b, `,"tp":`...)
	b, ok4 := jsonplain.AppendFloat(b, p.TP)
	if !ok || !ok2 || !ok3 || !ok4 {
		return b, false
	}
	b = append(b, `,"magic":`...)
	b = strconv.AppendInt(b, p.Magic, 10)
	b = append(b, `,"comment":"`...)
	b = append(b, p.Comment...)
	b = append(b, `","open_time":"`...)
	if b, ok = jsonplain.AppendTime(b, p.OpenTime); !ok {
		return b, false
	}
	return append(b, `"}`...), true
}

// snapshotUpdate is a follower's positions snapshot for the StatusWriter: the
// positions are encoded when they are written, so only the latest of a flush interval is.
type snapshotUpdate struct {
	row       store.PositionsSnapshot // without Positions
	positions []broker.Position       // the queue's own copy (the account's while it puts a report)
}
