package store

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

// lastPerKey keeps the last row of each key, in first-seen key order.
func lastPerKey[T any, K comparable](rows []T, key func(T) K) []T {
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
