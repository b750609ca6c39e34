package pgparams_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/snapcopier/copier/internal/pgparams"
	"github.com/snapcopier/copier/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// Each array this package encodes reads back in PostgreSQL exactly as the same Go values
// sent through pgx's own encoding: NULLs, empty arrays, extremes, special floats, times
// before PostgreSQL's epoch and below its microsecond, text beyond ASCII.
func TestArraysReadBackAsPgxEncodesThem(t *testing.T) {
	db := storetest.NewDB(t)
	ctx := context.Background()
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()

	ints := []int64{0, 1, -1, math.MaxInt64, math.MinInt64, 1 << 40}
	floats := []float64{0, math.Copysign(0, -1), 1.5, -2.25e-300, math.MaxFloat64, math.Inf(1), math.Inf(-1), math.NaN()}
	floatNull := []bool{false, false, true, false, false, false, true, false}
	texts := []string{"", "copying", "ünïcödé ✓", "quote ' and \" and \\ and {,}", "NULL"}
	berlin := time.FixedZone("CET", 3600)
	times := []time.Time{
		time.Date(2026, 12, 6, 4, 21, 55, 123456789, time.UTC),
		time.Date(1999, 12, 31, 23, 59, 59, 999999999, berlin),
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1969, 7, 20, 20, 17, 40, 500, time.UTC),
		{},
	}
	timeNull := []bool{false, false, false, false, true}

	var p pgparams.Params
	p.Text("node-ä")
	p.Int8Array(len(ints), func(i int) int64 { return ints[i] })
	p.Float8Array(len(floats), func(i int) (float64, bool) { return floats[i], !floatNull[i] })
	p.TextArray(len(texts), func(i int) string { return texts[i] })
	p.TextArrayBytes(len(texts), func(i int) []byte { return []byte(texts[i]) })
	p.TimestamptzArray(len(times), func(i int) (time.Time, bool) { return times[i], !timeNull[i] })
	p.Int8Array(0, nil)
	p.Float8Array(0, nil)
	p.TimestamptzArray(0, nil)

	const sql = `SELECT $1::text, $2::bigint[]::text, $3::float8[]::text, $4::text[]::text, $5::text[]::text, $6::timestamptz[]::text,
		$7::bigint[]::text, $8::float8[]::text, $9::timestamptz[]::text`
	if _, err := conn.Exec(ctx, `SET TimeZone = 'UTC'`); err != nil {
		t.Fatal(err)
	}
	sd, err := conn.Conn().Prepare(ctx, "pgparams_test", sql)
	if err != nil {
		t.Fatal(err)
	}
	for i, oid := range p.OIDs() {
		if sd.ParamOIDs[i] != oid {
			t.Fatalf("parameter %d: statement expects type %d, encoded %d", i+1, sd.ParamOIDs[i], oid)
		}
	}
	res := conn.Conn().PgConn().ExecPrepared(ctx, sd.Name, p.Values(), p.Formats(), nil).Read()
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if len(res.Rows) != 1 || len(res.Rows[0]) != p.Len() {
		t.Fatalf("got %d rows", len(res.Rows))
	}
	got := res.Rows[0]

	var floatArg []*float64
	for i := range floats {
		if !floatNull[i] {
			floatArg = append(floatArg, &floats[i])
		} else {
			floatArg = append(floatArg, nil)
		}
	}
	var timeArg []*time.Time
	for i := range times {
		if !timeNull[i] {
			timeArg = append(timeArg, &times[i])
		} else {
			timeArg = append(timeArg, nil)
		}
	}
	want := make([]string, 9)
	ptrs := make([]any, 9)
	for i := range want {
		ptrs[i] = &want[i]
	}
	if err := conn.QueryRow(ctx, sql, "node-ä", ints, floatArg, texts, texts, timeArg, []int64{}, []float64{}, []time.Time{}).Scan(ptrs...); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Errorf("parameter %d reads back as %q, through pgx as %q", i+1, got[i], want[i])
		}
	}
	if !t.Failed() && want[3] == "{}" {
		t.Fatal("the comparison read nothing")
	}

	// Reset keeps nothing of the last statement.
	p.Reset()
	if p.Len() != 0 || len(p.Values()) != 0 || len(p.OIDs()) != 0 || len(p.Formats()) != 0 {
		t.Fatalf("after Reset: %d parameters", p.Len())
	}
}
