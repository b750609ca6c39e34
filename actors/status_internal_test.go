package actors

import "testing"

// TestJournalKeepsTheNewestInOrder: the account's journal holds the newest journalSize
// entries, oldest first, before and after its ring wraps; an account without entries has
// none.
func TestJournalKeepsTheNewestInOrder(t *testing.T) {
	var b accountBoard
	if j := b.snapshot().Journal; j != nil {
		t.Fatalf("empty journal: %+v", j)
	}
	for _, n := range []int{1, journalSize - 1, journalSize, journalSize + 1, 2*journalSize + 7} {
		b = accountBoard{}
		for i := 1; i <= n; i++ {
			b.record(nil, []JournalEntry{{MasterTicket: int64(i)}})
		}
		j := b.snapshot().Journal
		want := min(n, journalSize)
		if len(j) != want {
			t.Fatalf("%d entries: journal holds %d, want %d", n, len(j), want)
		}
		for i, e := range j {
			if e.MasterTicket != int64(n-want+1+i) {
				t.Fatalf("%d entries: entry %d is %d, want %d (oldest first)", n, i, e.MasterTicket, n-want+1+i)
			}
		}
	}
}
