package store

import (
	"fmt"
	"strings"
	"testing"
)

func migrationsNumbered(versions ...int) []Migration {
	out := make([]Migration, len(versions))
	for i, v := range versions {
		out[i] = Migration{Version: v, Name: fmt.Sprintf("%04d_m%d.sql", v, i)}
	}
	return out
}

// TestMigrationNumbering: the embedded migrations pass, the historical gap (5, 6) is
// allowed, and from version 7 on a gap or a shared number is refused with both names.
func TestMigrationNumbering(t *testing.T) {
	if _, err := Migrations(); err != nil {
		t.Fatalf("embedded migrations: %v", err)
	}
	cases := []struct {
		name     string
		versions []int
		want     string // "" = accepted; else a part of the error
	}{
		{"historical gap", []int{1, 2, 3, 4, 7, 8, 9}, ""},
		{"next after the last", []int{1, 2, 3, 4, 7, 8, 9, 10, 11, 12}, ""},
		{"gap going forward", []int{1, 2, 3, 4, 7, 8, 9, 10, 11, 13}, "0013_m9.sql follows 0011_m8.sql"},
		{"gap right after 7", []int{1, 2, 3, 4, 7, 9}, "want 8"},
		{"shared version", []int{1, 2, 3, 4, 7, 8, 9, 10, 11, 11}, "share version 11"},
		{"shared old version", []int{1, 2, 2, 3}, "share version 2"},
	}
	for _, c := range cases {
		err := checkNumbering(migrationsNumbered(c.versions...))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && err == nil:
			t.Errorf("%s: accepted, want an error with %q", c.name, c.want)
		case c.want != "" && !strings.Contains(err.Error(), c.want):
			t.Errorf("%s: error %q lacks %q", c.name, err, c.want)
		}
	}
}
