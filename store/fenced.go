package store

import "slices"

// FencedResult counts what a fenced batch did: rows written, and rows refused because the
// writer no longer owns the account at that epoch (stale writes that were stopped).
type FencedResult struct {
	Applied int64
	Refused int64
}

// fenceLock: the fenced writes to other tables (tickets, positions snapshots, protection
// states) check the owner and epoch on the account's row under FOR KEY SHARE. That lock
// blocks a claim (FOR UPDATE, the only change of lease_epoch or of the owner to another
// node) until the write commits, so a write checked against its owner's epoch always lands
// before a new owner's claim; it does not wait for, nor hold up, the owner's own lease
// renewals and releases (FOR NO KEY UPDATE), as FOR SHARE did — at 20,000 followers on a
// 1 s interval, lease cycles waiting behind those writes missed their deadline.

// lastPerKey keeps the last row of each key, in first-seen key order. Rows whose keys all
// differ (the StatusWriter's batches, whose queue keeps one row per key) come back as they
// are: a sorted copy of the keys tells, at a fraction of the bytes of the map and the
// second slice that only a repeated key needs.
func lastPerKey[T any, K comparable](rows []T, key func(T) K, compare func(a, b K) int) []T {
	if len(rows) < 2 {
		return rows
	}
	keys := make([]K, len(rows))
	for i, r := range rows {
		keys[i] = key(r)
	}
	slices.SortFunc(keys, compare)
	repeated := false
	for i := 1; i < len(keys) && !repeated; i++ {
		repeated = keys[i] == keys[i-1]
	}
	if !repeated {
		return rows
	}
	idx := make(map[K]int, len(rows))
	out := make([]T, 0, len(rows))
	for _, r := range rows {
		k := key(r)
		if i, ok := idx[k]; ok {
			out[i] = r
			continue
		}
		idx[k] = len(out)
		out = append(out, r)
	}
	return out
}

// compareKey2 and compareKey3 order composite keys for lastPerKey.
func compareKey2(a, b [2]int64) int { return slices.Compare(a[:], b[:]) }
func compareKey3(a, b [3]int64) int { return slices.Compare(a[:], b[:]) }

// writeBatch is the most rows a fenced write sends in one statement. pgx writes a
// statement's message into a buffer it shrinks again after every message (and, through its
// typed encoding, did the same with the parameters: see execEncoded), so one statement of
// 60,000 rows grew buffers by doubling to megabytes on every flush (6 % of the CPU of a
// 10,000-follower fan-out); statements of this size stay within the caches. Each row is
// fenced on its own, so a write split in statements stores the same.
const writeBatch = 1000

// inBatches runs write on rows, size at a time, in order, and adds up the results; it
// stops at the first error.
func inBatches[T any](rows []T, size int, write func([]T) (FencedResult, error)) (FencedResult, error) {
	var total FencedResult
	for batch := range slices.Chunk(rows, size) {
		r, err := write(batch)
		total.Applied += r.Applied
		total.Refused += r.Refused
		if err != nil {
			return total, err
		}
	}
	return total, nil
}
