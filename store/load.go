package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// FollowerLoad is what an owner reads of one follower when it takes it up or reloads it:
// its configuration, its protections, and (WithTickets) its open ticket map.
type FollowerLoad struct {
	Config      FollowerConfig
	Protection  Protection
	Tickets     []TicketRow
	WithTickets bool
	Err         error // ErrNotFound when the account is gone
}

// LoadRequest asks for one follower; Tickets asks for its open ticket map too.
type LoadRequest struct {
	ID      int64
	Tickets bool
}

// LoadFollowers reads many followers in one read-only, repeatable-read transaction of six
// queries, whatever their number: a takeover of thousands of accounts costs a few round
// trips instead of three per account. The answer has one entry per request, in order.
func LoadFollowers(ctx context.Context, pool *pgxpool.Pool, reqs []LoadRequest) ([]FollowerLoad, error) {
	ids := make([]int64, len(reqs))
	var withTickets []int64
	for i, r := range reqs {
		ids[i] = r.ID
		if r.Tickets {
			withTickets = append(withTickets, r.ID)
		}
	}
	byID := make(map[int64]*FollowerLoad, len(reqs))
	err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		clear(byID)
		rows, err := tx.Query(ctx, `SELECT `+accountColumns+`, config_version FROM trading_accounts WHERE id = ANY($1)`, ids)
		if err != nil {
			return err
		}
		cfgs, err := pgx.CollectRows(rows, scanFollowerConfig)
		if err != nil {
			return err
		}
		for _, c := range cfgs {
			byID[c.Account.ID] = &FollowerLoad{Config: c, Protection: Protection{States: map[int64]ProtectionRow{}}}
		}
		rows, err = tx.Query(ctx, `SELECT `+linkColumns+` FROM copy_links WHERE follower_id = ANY($1) AND enabled ORDER BY follower_id, id`, ids)
		if err != nil {
			return err
		}
		links, err := pgx.CollectRows(rows, scanLink)
		if err != nil {
			return err
		}
		for _, l := range links {
			if f := byID[l.FollowerID]; f != nil {
				f.Config.Links = append(f.Config.Links, l)
			}
		}
		rows, err = tx.Query(ctx, `SELECT `+accountColumns+` FROM trading_accounts
			WHERE id IN (SELECT master_id FROM copy_links WHERE follower_id = ANY($1) AND enabled) AND enabled`, ids)
		if err != nil {
			return err
		}
		masters, err := pgx.CollectRows(rows, scanAccount)
		if err != nil {
			return err
		}
		accounts := make([]*Account, 0, len(byID)+len(masters))
		for _, f := range byID {
			accounts = append(accounts, &f.Config.Account)
		}
		for i := range masters {
			accounts = append(accounts, &masters[i])
		}
		if err := fillPlatformSymbols(ctx, tx, accounts); err != nil {
			return err
		}
		byMaster := make(map[int64]Account, len(masters))
		for _, m := range masters {
			byMaster[m.ID] = m
		}
		for _, f := range byID {
			f.Config.Masters = make(map[int64]Account, len(f.Config.Links))
			for _, l := range f.Config.Links {
				if m, ok := byMaster[l.MasterID]; ok {
					f.Config.Masters[m.ID] = m
				}
			}
		}
		rows, err = tx.Query(ctx, `SELECT account_id, limits FROM account_protection WHERE account_id = ANY($1)`, ids)
		if err != nil {
			return err
		}
		var id int64
		var limits []byte
		if _, err := pgx.ForEachRow(rows, []any{&id, &limits}, func() error {
			if f := byID[id]; f != nil {
				f.Protection.Limits = append([]byte(nil), limits...)
			}
			return nil
		}); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT follower_id, link_id, coalesce(lease_epoch, 0), state, reset_gen, updated_at
			FROM protection_state WHERE follower_id = ANY($1)`, ids)
		if err != nil {
			return err
		}
		states, err := pgx.CollectRows(rows, scanProtectionRow)
		if err != nil {
			return err
		}
		for _, r := range states {
			if f := byID[r.FollowerID]; f != nil {
				f.Protection.States[r.LinkID] = r
			}
		}
		if len(withTickets) == 0 {
			return nil
		}
		rows, err = tx.Query(ctx, `SELECT follower_id, lease_epoch, link_id, master_ticket, follower_ticket, volume
			FROM copy_positions WHERE follower_id = ANY($1) AND closed_at IS NULL ORDER BY follower_id, link_id, master_ticket`, withTickets)
		if err != nil {
			return err
		}
		tickets, err := pgx.CollectRows(rows, scanTicketRow)
		if err != nil {
			return err
		}
		for _, t := range tickets {
			if f := byID[t.FollowerID]; f != nil {
				f.Tickets = append(f.Tickets, t)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: load %d followers: %w", len(reqs), err)
	}
	out := make([]FollowerLoad, len(reqs))
	for i, r := range reqs {
		f := byID[r.ID]
		if f == nil {
			out[i].Err = fmt.Errorf("%w: account %d", ErrNotFound, r.ID)
			continue
		}
		out[i] = *f
		out[i].WithTickets = r.Tickets
	}
	return out, nil
}
