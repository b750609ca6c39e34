package actors

import (
	"sync"
	"testing"

	"github.com/google/uuid"
)

// TestNewRequestIDIsARandomUUID: ids are version 4 / RFC 9562 variant, none repeats across
// goroutines, and two generators seeded separately do not start alike (a fixed seed would
// repeat ids across nodes and restarts).
func TestNewRequestIDIsARandomUUID(t *testing.T) {
	const workers, each = 8, 20000
	ids := make([][]uuid.UUID, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				ids[w] = append(ids[w], newRequestID())
			}
		}()
	}
	wg.Wait()
	seen := make(map[uuid.UUID]bool, workers*each)
	for _, list := range ids {
		for _, id := range list {
			if id.Version() != 4 || id.Variant() != uuid.RFC4122 {
				t.Fatalf("%v: version %d variant %v, want 4 / RFC 4122", id, id.Version(), id.Variant())
			}
			if seen[id] {
				t.Fatalf("%v repeated", id)
			}
			seen[id] = true
		}
	}
	a, b := idSources.New(), idSources.New()
	var x, y [16]byte
	a.(interface{ Read([]byte) (int, error) }).Read(x[:])
	b.(interface{ Read([]byte) (int, error) }).Read(y[:])
	if x == y {
		t.Fatal("two generators gave the same first bytes: they are not seeded independently")
	}
}
