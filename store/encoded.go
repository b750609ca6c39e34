package store

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snapcopier/copier/internal/pgparams"
)

// encodedParams keeps binary-encoded parameters, and their buffers, between statements.
var encodedParams = sync.Pool{New: func() any { return new(pgparams.Params) }}

// paramTypes holds each encoded statement's parameter types as the server described them
// (sql → []uint32). They follow from the statement's text (every parameter is cast), not
// from the connection or the database.
var paramTypes sync.Map

// execEncoded runs sql with the parameters that encode appends in binary
// (internal/pgparams), and returns the rows it affected. The batch writes go this way:
// pgx's typed encoding boxes every array element. It runs as the unnamed statement, which
// PostgreSQL plans for its parameters every time (ParseConfig says why), in one round
// trip once the statement's parameter types are known; nothing is prepared by name, so
// nothing is left on the server's session.
func execEncoded(ctx context.Context, pool *pgxpool.Pool, sql string, encode func(p *pgparams.Params)) (int64, error) {
	p := encodedParams.Get().(*pgparams.Params)
	defer func() { p.Reset(); encodedParams.Put(p) }()
	encode(p)
	c, err := pool.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer c.Release()
	oids, err := describedParams(ctx, c.Conn(), sql)
	if err != nil {
		return 0, err
	}
	if !slices.Equal(oids, p.OIDs()) {
		return 0, fmt.Errorf("the statement's parameter types are %v, the encoded ones %v", oids, p.OIDs())
	}
	res := c.Conn().PgConn().ExecParams(ctx, sql, p.Values(), oids, p.Formats(), nil).Read()
	if res.Err != nil {
		return 0, res.Err
	}
	return res.CommandTag.RowsAffected(), nil
}

// describedParams returns sql's parameter types, asking the server the first time (the
// unnamed statement, described and not executed).
func describedParams(ctx context.Context, conn *pgx.Conn, sql string) ([]uint32, error) {
	if oids, ok := paramTypes.Load(sql); ok {
		return oids.([]uint32), nil
	}
	sd, err := conn.Prepare(ctx, "", sql)
	if err != nil {
		return nil, err
	}
	paramTypes.Store(sql, sd.ParamOIDs)
	return sd.ParamOIDs, nil
}
