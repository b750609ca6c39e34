package fewmap

import (
	"maps"
	"math/rand/v2"
	"testing"
)

// TestMapAgreesWithAGoMap: random sets, deletes and gets on few keys (so that the inline
// entry is deleted and refilled often) give what a Go map gives.
func TestMapAgreesWithAGoMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var m Map[int]
	want := map[int64]int{}
	for step := range 20000 {
		k := int64(r.IntN(5))
		switch r.IntN(4) {
		case 0:
			m.Set(k, step)
			want[k] = step
		case 1:
			m.Delete(k)
			delete(want, k)
		case 2:
			odd := func(k int64, v int) bool { return (k+int64(v))%2 == 1 }
			seen := map[int64]int{}
			m.DeleteFunc(func(k int64, v int) bool { seen[k]++; return odd(k, v) })
			for k, n := range seen {
				if n != 1 {
					t.Fatalf("step %d: DeleteFunc saw key %d %d times", step, k, n)
				}
			}
			if len(seen) != len(want) {
				t.Fatalf("step %d: DeleteFunc saw %d keys of %d", step, len(seen), len(want))
			}
			maps.DeleteFunc(want, odd)
		}
		v, ok := m.Get(k)
		if wv, wok := want[k]; v != wv || ok != wok {
			t.Fatalf("step %d: Get(%d) = %d, %v; want %d, %v", step, k, v, ok, wv, wok)
		}
		if m.Len() != len(want) {
			t.Fatalf("step %d: Len %d, want %d", step, m.Len(), len(want))
		}
		if got := maps.Collect(m.All()); !maps.Equal(got, want) {
			t.Fatalf("step %d: All %v, want %v", step, got, want)
		}
	}
}

func TestZeroMapIsEmpty(t *testing.T) {
	var m Map[string]
	if _, ok := m.Get(0); ok || m.Len() != 0 {
		t.Fatal("zero Map not empty")
	}
	m.Delete(0)
	for range m.All() {
		t.Fatal("zero Map yields")
	}
}

func TestAllStopsWhenAsked(t *testing.T) {
	var m Map[int]
	for k := range int64(4) {
		m.Set(k, 1)
	}
	n := 0
	for range m.All() {
		n++
		if n == 2 {
			break
		}
	}
	if n != 2 {
		t.Fatalf("yielded %d after break at 2", n)
	}
}
