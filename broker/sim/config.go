package sim

import (
	"time"

	"github.com/snapcopier/copier/broker"
)

// Defaults applied by New to zero Config fields.
const (
	// DefaultTickInterval is the step of the price process.
	DefaultTickInterval = 100 * time.Millisecond
	// DefaultFeedBuffer is the channel capacity of one feed subscription.
	DefaultFeedBuffer = 1024
	// DefaultDedupWindow is how many request ids per account the server remembers.
	DefaultDedupWindow = 10000
)

// Config configures a Server. The zero value is a working server: default symbols, real
// clock, no faults, no token enforcement or de-duplication, and no auto-provisioning.
type Config struct {
	// Seed seeds every random decision: the price process, fault and dropped-event draws,
	// and the request ids of master trades. Each account and each symbol draws from its own
	// stream derived from Seed and its name, so one account's decisions repeat no matter
	// what other accounts do.
	Seed int64
	// Clock stamps server times (positions, results, events, the order log) and paces the
	// price process. Default time.Now. Injected Latency always waits in real time.
	Clock func() time.Time
	// Options are the initial server-wide options; SetOptions changes them.
	Options broker.ServerOptions
	// Faults is the initial global fault profile; SetFaults changes it.
	Faults broker.Faults
	// AutoProvision creates an unknown account on Connect from DefaultAccount (with the
	// login of the credentials). Without it Connect to an unknown login fails with
	// ErrPermanent / CodeAuthFailed.
	AutoProvision bool
	// DefaultAccount is the spec of auto-provisioned accounts; its Login is ignored. Zero
	// fields default to currency USD, balance 10,000, leverage 100, hedging, any password.
	DefaultAccount broker.AccountSpec
	// Symbols are the instruments the server offers; nil means DefaultSymbols().
	Symbols []SymbolConfig
	// TickInterval is the step of the price process (default DefaultTickInterval). Prices
	// advance lazily: a quote read at time t walks every step since the last read.
	TickInterval time.Duration
	// TriggerStops makes the server close positions whose SL or TP the price has reached,
	// overwriting their comment with "[sl]" or "[tp]". Stops are evaluated whenever the
	// account is used (any session or Controller call on it) and by Server.CheckStops.
	TriggerStops bool
	// OverwriteCommentOnPartialClose makes a partial close rewrite the remaining
	// position's comment to "from #<ticket>". The ticket itself never changes (MT5 style).
	OverwriteCommentOnPartialClose bool
	// FeedBuffer is the channel capacity of each feed subscription (default
	// DefaultFeedBuffer). A subscription whose buffer is full when an event is published
	// is closed; the consumer resubscribes and gets a new epoch.
	FeedBuffer int
	// DedupWindow is how many request ids per account are remembered for de-duplication
	// (default DefaultDedupWindow); the oldest are forgotten first.
	DedupWindow int
	// OrderLogLimit bounds the order log: when positive, at least the newest
	// OrderLogLimit entries are kept and older ones may be discarded. 0 keeps everything.
	OrderLogLimit int
}

// withDefaults returns c with zero fields replaced by their defaults. It panics on a
// configuration that cannot work (a programming error, like regexp.MustCompile).
func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.TickInterval <= 0 {
		c.TickInterval = DefaultTickInterval
	}
	if c.FeedBuffer <= 0 {
		c.FeedBuffer = DefaultFeedBuffer
	}
	if c.DedupWindow <= 0 {
		c.DedupWindow = DefaultDedupWindow
	}
	if c.OrderLogLimit < 0 {
		c.OrderLogLimit = 0
	}
	if c.Symbols == nil {
		c.Symbols = DefaultSymbols()
	} else {
		c.Symbols = append([]SymbolConfig(nil), c.Symbols...)
	}
	if c.DefaultAccount.Balance == 0 {
		c.DefaultAccount.Balance = 10000
	}
	c.DefaultAccount = accountDefaults(c.DefaultAccount)
	if err := validateFaults(c.Faults); err != nil {
		panic("sim: invalid Config.Faults: " + err.Error())
	}
	return c
}

// accountDefaults fills the zero currency, leverage and mode of an account spec (a zero
// balance is a valid balance).
func accountDefaults(s broker.AccountSpec) broker.AccountSpec {
	if s.Currency == "" {
		s.Currency = "USD"
	}
	if s.Leverage <= 0 {
		s.Leverage = 100
	}
	if s.Mode == 0 {
		s.Mode = broker.Hedging
	}
	return s
}
