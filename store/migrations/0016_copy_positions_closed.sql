-- The ticket map's history: a closed row (closed_at set) is read by nothing that copies, and
-- without a bound the table grows by a row for every copy ever made, so that each upsert
-- walks a primary key larger than memory. Nodes delete closed rows older than their
-- --ticket-history (store.PruneClosedTickets), oldest first: this index finds them without
-- reading the open rows or the newer history. Rows enter it only when they close (an open
-- row's closed_at is NULL), at its right-hand end.
CREATE INDEX copy_positions_closed_idx ON copy_positions (closed_at) WHERE closed_at IS NOT NULL;
