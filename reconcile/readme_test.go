package reconcile

import (
	"os"
	"regexp"
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
