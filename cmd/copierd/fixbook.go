package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snapcopier/copier/broker"
	"github.com/snapcopier/copier/broker/fix"
	"github.com/snapcopier/copier/store"
)

// storeBook is the FIX position book in PostgreSQL (fix_positions): it outlives the node
// and follows the account to the node that takes it over. Writes go through the owner
// fence: node must own the account at the epoch of the order whose fill made them. A row
// is the position's JSON with the ClOrdIDs of its protective orders (fix.BookPosition).
type storeBook struct {
	pool     *pgxpool.Pool
	node     string
	platform string
}

var _ fix.Book = storeBook{}

func (b storeBook) Positions(ctx context.Context, login string) ([]fix.BookPosition, error) {
	rows, err := store.ReadFIXPositions(ctx, b.pool, b.platform, login)
	if err != nil {
		return nil, err
	}
	out := make([]fix.BookPosition, 0, len(rows))
	for _, r := range rows {
		var p fix.BookPosition
		if err := json.Unmarshal(r.Position, &p); err != nil {
			return nil, fmt.Errorf("fix position book: %s ticket %d: %w", login, r.Ticket, err)
		}
		out = append(out, p)
	}
	return out, nil
}

func (b storeBook) Put(ctx context.Context, login string, fence broker.Order, p fix.BookPosition) error {
	row := store.FIXPosition{Ticket: p.Ticket}
	if p.Volume > 0 {
		doc, err := json.Marshal(p)
		if err != nil {
			return err
		}
		row.Position = doc
	}
	ok, err := store.PutFIXPositionFenced(ctx, b.pool, b.node, fence.Token, b.platform, login, row)
	if err != nil {
		return err
	}
	if !ok {
		return fix.ErrStaleBookWrite
	}
	return nil
}
