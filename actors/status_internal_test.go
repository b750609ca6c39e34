package actors

import (
	"testing"
	"time"
)

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

// TestPhasesCountWhatTheSnapshotHolds: the metrics' count of accounts by phase agrees
// with the statuses a Snapshot copies.
func TestPhasesCountWhatTheSnapshotHolds(t *testing.T) {
	var b board
	for id, p := range map[int64]AccountPhase{1: PhaseCopying, 2: PhaseCopying, 3: PhaseDirty, 4: PhaseReconciling, 5: PhaseCopying} {
		b.get(id).update(func(s *AccountStatus) { s.Phase = p })
	}
	b.get(6) // just spawned
	b.remove(3)
	byPhase, total := b.phases()
	want := map[AccountPhase]int{}
	all := b.all()
	for _, a := range all {
		want[a.Phase]++
	}
	if total != len(all) || total != 5 {
		t.Fatalf("phases counted %d accounts, the snapshot holds %d (want 5)", total, len(all))
	}
	if len(byPhase) != len(want) {
		t.Fatalf("by phase %v, the snapshot's %v", byPhase, want)
	}
	for p, n := range want {
		if byPhase[p] != n {
			t.Errorf("phase %v: counted %d, the snapshot holds %d", p, byPhase[p], n)
		}
	}
	if byPhase[PhaseCopying] != 3 {
		t.Errorf("copying: %d, want 3", byPhase[PhaseCopying])
	}
}

// TestQualityByLink: each link's copies are summarised on their own, by link id, whether
// the link was the account's first to copy or a later one.
func TestQualityByLink(t *testing.T) {
	var b accountBoard
	if q := b.snapshot().Quality; q != nil {
		t.Fatalf("quality before any copy: %+v", q)
	}
	copies := map[int64]int{30: 3, 10: 1, 20: 2} // link 30 copies first
	for _, link := range []int64{30, 30, 10, 20, 30, 20} {
		b.record(nil, []JournalEntry{{Link: link, HasQuality: true, Quality: Quality{Feed: time.Duration(link) * time.Millisecond}}})
	}
	b.record(nil, []JournalEntry{{Link: 40}}) // no quality: no summary
	q := b.snapshot().Quality
	if len(q) != len(copies) {
		t.Fatalf("%d summaries, want %d: %+v", len(q), len(copies), q)
	}
	for i, s := range q {
		if i > 0 && q[i-1].Link >= s.Link {
			t.Fatalf("summaries not by link: %+v", q)
		}
		if s.Copies != copies[s.Link] || s.FeedP50 != time.Duration(s.Link)*time.Millisecond {
			t.Fatalf("link %d: %d copies, feed p50 %v; want %d copies at %d ms", s.Link, s.Copies, s.FeedP50, copies[s.Link], s.Link)
		}
	}
}
