package store

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/snapcopier/copier/internal/pgparams"
)

// encodedParams keeps binary-encoded parameters, and their buffers, between statements.
var encodedParams = sync.Pool{New: func() any { return new(pgparams.Params) }}

// execEncoded runs sql with the parameters that encode appends in binary
// (internal/pgparams), as a prepared statement of the connection (prepared on its first
// use, as pgx prepares the other queries), and returns the rows it affected. The batch
// writes go this way: pgx's typed encoding boxes every array element.
func execEncoded(ctx context.Context, pool *pgxpool.Pool, sql string, encode func(p *pgparams.Params)) (int64, error) {
	p := encodedParams.Get().(*pgparams.Params)
	defer func() { p.Reset(); encodedParams.Put(p) }()
	encode(p)
	c, err := pool.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer c.Release()
	sd, err := c.Conn().Prepare(ctx, sql, sql)
	if err != nil {
		return 0, err
	}
	if !slices.Equal(sd.ParamOIDs, p.OIDs()) {
		return 0, fmt.Errorf("the statement's parameter types are %v, the encoded ones %v", sd.ParamOIDs, p.OIDs())
	}
	res := c.Conn().PgConn().ExecPrepared(ctx, sd.Name, p.Values(), p.Formats(), nil).Read()
	if res.Err != nil {
		return 0, res.Err
	}
	return res.CommandTag.RowsAffected(), nil
}
