package actors

import (
	crand "crypto/rand"
	"math/rand/v2"
	"sync"

	"github.com/google/uuid"
)

// idSources holds ChaCha8 generators (cryptographically strong), each seeded once from
// the operating system's random source. uuid.New reads that source for every id; through
// crypto/rand that call needs more stack than the rest of an order's mailbox run, and
// would grow the run's stack past the runtime's cached sizes (internal/stackgrow).
var idSources = sync.Pool{New: func() any {
	var seed [32]byte
	crand.Read(seed[:]) // never fails: crypto/rand crashes the process instead
	return rand.NewChaCha8(seed)
}}

// newRequestID returns a random (version 4, RFC 9562) UUID: 122 random bits, as likely to
// repeat as uuid.New's.
func newRequestID() uuid.UUID {
	g := idSources.Get().(*rand.ChaCha8)
	var u uuid.UUID
	g.Read(u[:])
	idSources.Put(g)
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // variant 10
	return u
}
