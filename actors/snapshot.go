package actors

import (
	"encoding/json"
	"time"

	"github.com/snapcopier/copier/broker"
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

func encodeSnapshot(ps []broker.Position) []byte {
	out := make([]SnapshotPosition, len(ps))
	for i, p := range ps {
		out[i] = NewSnapshotPosition(p)
	}
	doc, err := json.Marshal(out)
	if err != nil {
		return []byte("[]") // plain values: cannot fail
	}
	return doc
}

// snapshotUpdate is a follower's positions snapshot for the StatusWriter: the
// positions are encoded when they are written, so only the latest of a flush interval is.
type snapshotUpdate struct {
	row       store.PositionsSnapshot // without Positions
	positions []broker.Position       // a copy the sender no longer changes
}
