package sim

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// maxWalkSteps is how many single steps a lazy catch-up walks one by one; a longer gap is
// walked as one step with the same total variance.
const maxWalkSteps = 256

// priceFeed is a seeded geometric random walk of a mid price, one step per tick interval
// of the server clock, advanced lazily when read. The mid stays within a factor of two of
// its initial value.
type priceFeed struct {
	mu       sync.Mutex
	rng      *rand.Rand
	mid      float64
	lo, hi   float64
	sigma    float64
	origin   time.Time
	interval time.Duration
	step     int64 // index of the last tick walked
}

func newPriceFeed(seed int64, name string, price, sigma float64, origin time.Time, interval time.Duration) *priceFeed {
	return &priceFeed{
		rng:      rand.New(rand.NewPCG(uint64(seed), streamID("price", name))),
		mid:      price,
		lo:       price / 2,
		hi:       price * 2,
		sigma:    sigma,
		origin:   origin,
		interval: interval,
	}
}

// at returns the mid price at now.
func (f *priceFeed) at(now time.Time) float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advance(now)
	return f.mid
}

// set moves the mid price to mid at now; the walk continues from there.
func (f *priceFeed) set(now time.Time, mid float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advance(now)
	f.mid = mid
	f.lo = math.Min(f.lo, mid/2)
	f.hi = math.Max(f.hi, mid*2)
}

// advance walks every tick between the last one walked and now. A clock that goes back
// leaves the price where it is.
func (f *priceFeed) advance(now time.Time) {
	k := int64(now.Sub(f.origin) / f.interval)
	n := k - f.step
	if n <= 0 {
		return
	}
	f.step = k
	if f.sigma == 0 {
		return
	}
	if n > maxWalkSteps {
		f.move(f.sigma * math.Sqrt(float64(n)))
		return
	}
	for range n {
		f.move(f.sigma)
	}
}

func (f *priceFeed) move(sd float64) {
	f.mid = min(max(f.mid*math.Exp(sd*f.rng.NormFloat64()), f.lo), f.hi)
}

// streamID derives the second PCG seed word of a named random stream, so each account and
// symbol draws from its own sequence.
func streamID(kind, name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write([]byte(name))
	return h.Sum64()
}
