package reconcile

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeExamples: every JSON settings example in README.md parses.
func TestReadmeExamples(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```json\n(.*?)```").FindAllSubmatch(b, -1)
	if len(blocks) == 0 {
		t.Fatal("no JSON examples in README.md")
	}
	for _, m := range blocks {
		if _, err := ParseSettings(m[1]); err != nil {
			t.Errorf("README example %s: %v", m[1], err)
		}
	}
}

// TestReadmeNamesEverySkipReason: the README's table of why a position was not copied
// names every reason a skip of a master position can carry, so the journal and
// copier_skips_total never show an undocumented one.
func TestReadmeNamesEverySkipReason(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "## Why a position was not copied")
	if !ok {
		t.Fatal(`README.md has no "Why a position was not copied" section`)
	}
	table, _, _ = strings.Cut(table, "\n## ")
	for r := SkipReason(1); r <= SkipStopPassed; r++ {
		switch r {
		case SkipUnidentified, SkipAccountMode:
			continue // about a follower position or the whole plan: not journalled as a skip
		}
		if !strings.Contains(table, "`"+r.String()+"`") {
			t.Errorf("README.md's skip table does not name %s", r)
		}
	}
	if !strings.HasPrefix(SkipReason(SkipStopPassed+1).String(), "SkipReason(") {
		t.Errorf("a reason after stop_passed exists: extend this test's range")
	}
}
